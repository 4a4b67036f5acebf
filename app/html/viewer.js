// attnscope HTML viewer: reads the page's embedded data (app/figure/render_html.cpp writes it),
// inflates the maps with the browser's own DecompressionStream and draws them with the
// app's colour tables and colour rule. Plain JavaScript, no framework, nothing fetched.
(function () {
  'use strict';
  const script = document.currentScript;
  // Inline in a notebook there may be several viewers: use the one this script sits in.
  const root = script ? script.closest('.attnscope-viewer') : document.querySelector('.attnscope-viewer');
  const data = JSON.parse(root.querySelector('.av-data').textContent);
  const $ = (selector) => root.querySelector(selector);
  const MASKED = 65535;      // the stored code of a masked cell
  const LEVELS = 65534;      // codes 0..65534 span each map's [lo, hi]
  const FOCUS_TARGET_PX = 512;  // as the PNG export: a single matrix >= 512 px on its longer side

  const state = {
    kind: 0,
    colormap: data.colormap,
    log: data.log_scale,
    layer: data.focus.layer,
    head: data.focus.head,
    sort: { column: 'head', descending: false },
    codes: null,  // [kind][layer * H + head] -> Uint16Array [rows * cols]
    windowCodes: null,  // [kind] -> Uint16Array: the app's zoomed window of one map, exact
    showWindow: Boolean(data.window),
  };

  function parseTable(hex) {
    const table = new Uint8Array(hex.length / 2);
    for (let i = 0; i < table.length; ++i) table[i] = parseInt(hex.substr(2 * i, 2), 16);
    return table;
  }
  const tables = {};
  for (const name of data.colormap_names) tables[name] = parseTable(data.colormaps[name]);

  async function inflate(base64) {
    const binary = atob(base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; ++i) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  // Each map is stored as its low bytes, then its high bytes (byte planes deflate better):
  // count maps of `cells` codes each, in order.
  function splitMaps(bytes, cells, count) {
    const maps = [];
    for (let m = 0, offset = 0; m < count; ++m, offset += 2 * cells) {
      const map = new Uint16Array(cells);
      for (let i = 0; i < cells; ++i) map[i] = bytes[offset + i] | (bytes[offset + cells + i] << 8);
      maps.push(map);
    }
    return maps;
  }

  const kind = () => data.kinds[state.kind];
  const mapIndex = (layer, head) => layer * data.H + head;

  // The stored value of a code over a map's [lo, hi]: lo + code * (hi - lo) / 65534; null when masked.
  function decode([lo, hi], code) {
    return code === MASKED ? null : lo + code * (hi - lo) / LEVELS;
  }

  // The colour rule of core/view/colormap.h (in float32 like the app):
  // t = clamp((v - low) / (high - low), 0, 1), index = floor(t * 255 + 0.5); log10 on a log scale.
  function colorIndex(value, low, high, log) {
    const f = Math.fround;
    if (log) {
      const floor = (v) => f(Math.log10(Math.max(v, 1e-30)));
      value = floor(value); low = floor(low); high = floor(high);
    }
    let t = high > low ? f(f(f(value) - f(low)) / f(f(high) - f(low))) : 0.5;
    if (!(t >= 0)) t = 0;
    t = Math.min(t, 1);
    return Math.floor(f(f(t * 255) + 0.5));
  }

  function currentColormap() { return kind().fixed_colormap || state.colormap; }
  function logScale() { return state.log && kind().log_scale_allowed; }
  // One map as the page draws it: its codes [rows * cols], quantization range, colour scale
  // ([low, high], the app's: the focus view's or the grid's) and axis labels.
  function mapSource(layer, head, view) {
    const index = mapIndex(layer, head), scales = kind().scale;
    return { rows: data.rows, cols: data.cols, codes: state.codes[state.kind][index], quant: kind().quant[index],
      scale: (logScale() ? scales[view + '_log'] : scales[view])[index], rowLabels: data.row_labels, colLabels: data.col_labels,
      zoomed: false };
  }
  // The app's zoomed window, when the page holds it and its map is focused.
  const windowFocused = () => data.window && data.window.layer === state.layer && data.window.head === state.head;
  function focusSource() {
    if (!(state.showWindow && windowFocused())) return mapSource(state.layer, state.head, 'focus');
    const w = data.window, k = w.kinds[state.kind];
    return { rows: w.rows, cols: w.cols, codes: state.windowCodes[state.kind], quant: k.quant,
      scale: logScale() ? k.scale_log : k.scale, rowLabels: w.row_labels, colLabels: w.col_labels, zoomed: true };
  }

  // Paints one map into an ImageData, cellPx pixels per cell; masked cells grey, hatched on
  // cells of at least 2 px where (row + col) is even (as the shader and the PNG export).
  function paintMap(source, cellPx) {
    const table = tables[currentColormap()];
    const [low, high] = source.scale;
    const log = logScale();
    const width = source.cols * cellPx, height = source.rows * cellPx;
    const image = new ImageData(width, height);
    for (let r = 0; r < source.rows; ++r) {
      for (let c = 0; c < source.cols; ++c) {
        const value = decode(source.quant, source.codes[r * source.cols + c]);
        let rgb;
        if (value === null) {
          rgb = cellPx >= 2 && (r + c) % 2 === 0 ? data.masked_hatch_color : data.masked_color;
        } else {
          const i = 3 * colorIndex(value, low, high, log);
          rgb = [table[i], table[i + 1], table[i + 2]];
        }
        for (let y = r * cellPx; y < (r + 1) * cellPx; ++y) {
          let p = 4 * (y * width + c * cellPx);
          for (let x = 0; x < cellPx; ++x, p += 4) {
            image.data[p] = rgb[0]; image.data[p + 1] = rgb[1]; image.data[p + 2] = rgb[2]; image.data[p + 3] = 255;
          }
        }
      }
    }
    return image;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function buildCaption() {
    const c = data.caption;
    const box = $('.av-caption');
    box.textContent = '';
    const title = el('b', '', c.model);
    box.append(title, el('span', '', '  ' + c.source));
    if (c.text) box.append(el('div', 'av-text', c.text));
    const sizes = `${data.layer_names.length} layer${data.layer_names.length === 1 ? '' : 's'} \u00d7 ${data.H} heads` +
      ` \u00b7 L ${data.L} \u00d7 S ${data.S} \u00b7 batch item ${c.batch_item} of ${c.B}` +
      ` \u00b7 mask: ${c.mask || 'none'} \u00b7 written by attnscope ${data.version}`;
    box.append(el('div', 'av-sizes', sizes));
    if (c.notes) box.append(el('div', 'av-notes', c.notes));
    if (c.interventions) box.append(el('div', 'av-interventions', 'interventions: ' + c.interventions));
    $('.av-batch').textContent = c.batch_item;
    if (data.pooling) $('.av-pooling').textContent = data.pooling;
  }

  function buildControls() {
    const kindSelect = $('.av-kind');
    data.kinds.forEach((k, i) => kindSelect.append(new Option(k.title, String(i))));
    kindSelect.addEventListener('change', () => { state.kind = Number(kindSelect.value); redraw(); });
    const mapSelect = $('.av-colormap');
    for (const name of data.colormap_names) mapSelect.append(new Option(name, name));
    mapSelect.value = state.colormap;
    mapSelect.addEventListener('change', () => { state.colormap = mapSelect.value; redraw(); });
    const log = $('.av-log');
    log.checked = state.log;
    log.addEventListener('change', () => { state.log = log.checked; redraw(); });
    const zoom = $('.av-window');
    zoom.parentElement.hidden = !data.window;
    zoom.checked = state.showWindow;
    zoom.addEventListener('change', () => { state.showWindow = zoom.checked; redraw(); });
    if (data.window) {
      const w = data.window;
      zoom.parentElement.title = `${data.layer_names[w.layer]}, head ${w.head}: queries ${w.row0}-${w.row0 + w.real_rows - 1},` +
        ` keys ${w.col0}-${w.col0 + w.real_cols - 1}` + (w.rows < w.real_rows || w.cols < w.real_cols
        ? ` (pooled to ${w.rows} \u00d7 ${w.cols})` : '');
    }
  }

  function buildGrid() {
    const grid = $('.av-grid');
    grid.style.gridTemplateColumns = `auto repeat(${data.H}, auto)`;
    grid.append(el('span', 'av-label', ''));
    for (let h = 0; h < data.H; ++h) grid.append(el('span', 'av-label', 'head ' + h));
    data.layer_names.forEach((name, layer) => {
      grid.append(el('span', 'av-label', name));
      for (let h = 0; h < data.H; ++h) {
        const tile = el('canvas', 'av-tile');
        tile.width = data.cols; tile.height = data.rows;
        tile.dataset.layer = layer; tile.dataset.head = h;
        tile.title = `${name}, head ${h}`;
        tile.addEventListener('click', () => focusHead(layer, h));
        grid.append(tile);
      }
    });
  }

  function drawGrid() {
    for (const tile of root.querySelectorAll('canvas.av-tile')) {
      const layer = Number(tile.dataset.layer), head = Number(tile.dataset.head);
      tile.getContext('2d').putImageData(paintMap(mapSource(layer, head, 'grid'), 1), 0, 0);
      tile.classList.toggle('av-focused', layer === state.layer && head === state.head);
    }
  }

  const LABEL_FONT = '11px system-ui, sans-serif';
  const shortLabel = (text) => (text.length > 14 ? text.slice(0, 13) + '\u2026' : text);

  // The focused map with its token labels: rows = queries (left), columns = keys (top).
  function drawFocus() {
    const canvas = $('.av-map');
    const source = focusSource();
    const cellPx = Math.max(1, Math.ceil(FOCUS_TARGET_PX / Math.max(source.rows, source.cols, 1)));
    const ctx = canvas.getContext('2d');
    ctx.font = LABEL_FONT;
    const widest = (labels) => Math.max(0, ...labels.map((t) => ctx.measureText(shortLabel(t)).width));
    const x0 = Math.ceil(widest(source.rowLabels)) + 8, y0 = Math.ceil(widest(source.colLabels)) + 8;
    canvas.width = x0 + source.cols * cellPx; canvas.height = y0 + source.rows * cellPx;
    Object.assign(canvas.dataset, { x0, y0, cellPx, rows: source.rows, cols: source.cols });
    ctx.font = LABEL_FONT;
    ctx.fillStyle = '#333';
    const every = Math.max(1, Math.ceil(12 / cellPx));  // labels at least 12 px apart
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (let r = 0; r < source.rows; r += every) ctx.fillText(shortLabel(source.rowLabels[r]), x0 - 4, y0 + (r + 0.5) * cellPx);
    ctx.save();
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    for (let c = 0; c < source.cols; c += every) ctx.fillText(shortLabel(source.colLabels[c]), -(y0 - 4), x0 + (c + 0.5) * cellPx);
    ctx.restore();
    ctx.putImageData(paintMap(source, cellPx), x0, y0);
    const zoomed = source.zoomed ? ' (zoomed window, exact cells)' : '';
    $('.av-focus-title').textContent = `${data.layer_names[state.layer]}, head ${state.head}: ${kind().title}${zoomed}`;
    drawColorbar(source.scale, y0, source.rows * cellPx);
  }

  function drawColorbar([low, high], top, height) {
    const canvas = $('.av-colorbar');
    const log = logScale();
    const table = tables[currentColormap()];
    const barWidth = 16;
    canvas.width = barWidth + 70; canvas.height = top + height + 8;
    const ctx = canvas.getContext('2d');
    for (let y = 0; y < height; ++y) {
      const i = 3 * Math.floor((1 - y / Math.max(1, height - 1)) * 255 + 0.5);
      ctx.fillStyle = `rgb(${table[i]},${table[i + 1]},${table[i + 2]})`;
      ctx.fillRect(0, top + y, barWidth, 1);
    }
    ctx.font = LABEL_FONT; ctx.fillStyle = '#333'; ctx.textBaseline = 'middle';
    const ticks = 5;
    for (let t = 0; t < ticks; ++t) {
      const f = t / (ticks - 1);
      const value = log ? Math.pow(10, Math.log10(low) + f * (Math.log10(high) - Math.log10(low))) : low + f * (high - low);
      const y = top + (1 - f) * (height - 1);
      ctx.fillRect(barWidth, y, 4, 1);
      ctx.fillText(Number(value.toPrecision(3)).toString(), barWidth + 6, y);
    }
    ctx.save(); ctx.translate(barWidth + 60, top + height / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center'; ctx.fillText(kind().label, 0, 0); ctx.restore();
  }

  // Decimals that show a value to the stored precision (the quantization step).
  function decimalsFor(step) {
    if (!(step > 0)) return 6;
    return Math.min(12, Math.max(0, Math.ceil(-Math.log10(step / 2))));
  }

  function hover(event) {
    const canvas = $('.av-map');
    const d = canvas.dataset;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left - Number(d.x0), y = event.clientY - rect.top - Number(d.y0);
    const c = Math.floor(x / Number(d.cellPx)), r = Math.floor(y / Number(d.cellPx));
    const tooltip = $('.av-tooltip');
    if (r < 0 || c < 0 || r >= Number(d.rows) || c >= Number(d.cols)) { tooltip.hidden = true; return; }
    const source = focusSource();
    const value = decode(source.quant, source.codes[r * source.cols + c]);
    const step = (source.quant[1] - source.quant[0]) / LEVELS;
    const shown = value === null ? 'masked' : value.toFixed(decimalsFor(step));
    const next = nextTokens(queryPosition(r));
    tooltip.textContent = `query ${source.rowLabels[r]}\nkey ${source.colLabels[c]}\n${kind().label} ${shown}` +
      (next ? `\n${next}` : '');
    showPosition(queryPosition(r));
    Object.assign(tooltip.dataset, { row: r, col: c, value: shown });
    const box = root.querySelector('.av-focus-box').getBoundingClientRect();
    tooltip.style.left = `${event.clientX - box.left + 14}px`;
    tooltip.style.top = `${event.clientY - box.top + 14}px`;
    tooltip.hidden = false;
  }

  // The text position of stored row r of the focused map (a pooled row: the first it covers).
  function queryPosition(r) {
    const source = focusSource();
    if (source.zoomed) return data.window.row0 + Math.floor(r * data.window.real_rows / data.window.rows);
    return data.row_positions[r];
  }

  const percent = (p) => `${(100 * p).toPrecision(3)}%`;
  const guessText = ([label, p]) => `'${label}' ${percent(p)}`;

  // "next: 'a' 41.2%, ..." after position t (at t for a masked-LM encoder); '' without predictions.
  function nextTokens(t) {
    const rows = data.predictions && data.predictions.rows;
    if (!rows || t >= rows.length || !rows[t]) return '';
    return `${data.predictions.encoder ? 'guess' : 'next'}: ${rows[t].top.map(guessText).join(', ')}`;
  }

  // The predictions and the logit lens at position t, under the focused map.
  function showPosition(t) {
    const box = $('.av-next');
    if (!data.predictions) { box.hidden = true; return; }
    const next = nextTokens(t);
    const lines = [`position ${t}` + (next ? ` \u2014 ${next}` : ' (not unembedded)')];
    if (data.lens && data.lens.top) {
      const column = data.lens.top.map((layer, l) => (layer[t] ? `${l === 0 ? 'emb' : 'L' + (l - 1)} ${guessText(layer[t])}` : ''));
      lines.push('logit lens (best guess after each layer): ' + column.filter(Boolean).join(' \u00b7 '));
    } else if (data.lens) {
      lines.push(data.lens.note);
    }
    box.textContent = lines.join('\n');
    box.dataset.position = t;
  }

  function formatMetric(value) { return value === null ? '-' : value.toFixed(3); }

  function sortedRows() {
    const { column, descending } = state.sort;
    const columns = data.metrics.columns;
    const key = (row) => column === 'head' ? row.layer * data.H + row.head
      : column === 'group' ? row.group : row.values[columns.findIndex((m) => m.name === column)];
    // As the app's table: NaN (null) last in either direction, ties keep layer-major order.
    return data.metrics.rows.map((row, i) => ({ row, i })).sort((a, b) => {
      const ka = key(a.row), kb = key(b.row);
      if ((ka === null) !== (kb === null)) return ka === null ? 1 : -1;
      if (ka !== null && ka !== kb) return (ka < kb) !== descending ? -1 : 1;
      return a.i - b.i;
    }).map((item) => item.row);
  }

  function buildMetricsHead() {
    const tr = el('tr');
    const columns = [{ name: 'head', heading: 'head', description: 'layer and head' },
      { name: 'group', heading: 'group', description: 'heads whose maps correlate (as attnscope analyze groups them)' },
      ...data.metrics.columns];
    for (const column of columns) {
      const th = el('th', '', column.heading);
      th.title = column.description;
      th.dataset.column = column.name;
      th.addEventListener('click', () => {
        const same = state.sort.column === column.name;
        // Metrics sort largest first, the head and group columns smallest first; again reverses.
        const first = column.name !== 'head' && column.name !== 'group';
        state.sort = { column: column.name, descending: same ? !state.sort.descending : first };
        drawMetrics();
      });
      tr.append(th);
    }
    $('.av-metrics thead').append(tr);
  }

  function drawMetrics() {
    const body = $('.av-metrics tbody');
    body.textContent = '';
    for (const row of sortedRows()) {
      const tr = el('tr');
      tr.dataset.layer = row.layer; tr.dataset.head = row.head;
      tr.append(el('td', '', `L${row.layer}H${row.head}`), el('td', '', String(row.group)));
      for (const value of row.values) tr.append(el('td', '', formatMetric(value)));
      tr.classList.toggle('av-focused', row.layer === state.layer && row.head === state.head);
      tr.addEventListener('click', () => focusHead(row.layer, row.head));
      body.append(tr);
    }
    for (const th of root.querySelectorAll('.av-metrics th')) {
      const on = th.dataset.column === state.sort.column;
      th.textContent = th.textContent.replace(/ [\u25b2\u25bc]$/, '') + (on ? (state.sort.descending ? ' \u25bc' : ' \u25b2') : '');
    }
  }

  function focusHead(layer, head) {
    state.layer = layer; state.head = head;
    $('.av-tooltip').hidden = true;
    redraw();
  }

  function redraw() {
    $('.av-log').disabled = !kind().log_scale_allowed;
    $('.av-colormap').disabled = Boolean(kind().fixed_colormap);
    $('.av-window').disabled = !windowFocused();
    drawGrid();
    drawFocus();
    drawMetrics();
    if (data.predictions) showPosition(data.predictions.rows.length - 1);
    root.dataset.ready = 'true';
  }

  async function start() {
    buildCaption();
    buildControls();
    buildGrid();
    buildMetricsHead();
    const bytes = await inflate(data.maps), perKind = data.layer_names.length * data.H;
    const maps = splitMaps(bytes, data.rows * data.cols, data.kinds.length * perKind);
    state.codes = data.kinds.map((k, i) => maps.slice(i * perKind, (i + 1) * perKind));
    if (data.window) state.windowCodes = splitMaps(await inflate(data.window.maps), data.window.rows * data.window.cols, data.kinds.length);
    $('.av-map').addEventListener('mousemove', hover);
    $('.av-map').addEventListener('mouseleave', () => { $('.av-tooltip').hidden = true; });
    redraw();
  }

  start().catch((error) => {
    root.prepend(el('div', 'av-error', 'attnscope viewer: ' + error.message));
    console.error(error);
  });
})();
