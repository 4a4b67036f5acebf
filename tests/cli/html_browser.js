// Drives attnscope HTML exports in headless Chromium (puppeteer-core, the system browser) for
// tests/cli/test_export_html.py. Usage: node html_browser.js SPEC.json OUT.json
// SPEC: {"puppeteer": DIR, "chromium": PATH, "pages": [{"path": FILE, "shots": DIR,
//        "focus": [{"layer", "head", "kind", "cells": [[r, c], ...]}], "metrics": true}],
//        "embedded": {"path": FILE}}
// OUT: per page the requests other than the page itself, console errors, tile count and per
// focus the map canvas geometry, its screenshot file and the tooltip at each cell; for
// "embedded", the tiles of the page inlined twice into a host page and shown in an iframe.
'use strict';
const fs = require('fs');
const path = require('path');

async function focusMap(page, focus, shotPath) {
  await page.click(`canvas.av-tile[data-layer="${focus.layer}"][data-head="${focus.head}"]`);
  await page.select('.av-kind', String(focus.kind || 0));
  const canvas = await page.$('canvas.av-map');
  const geometry = await page.$eval('canvas.av-map', (c) => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, x0: Number(c.dataset.x0), y0: Number(c.dataset.y0),
      cellPx: Number(c.dataset.cellPx), rows: Number(c.dataset.rows), cols: Number(c.dataset.cols),
      width: c.width, height: c.height };
  });
  await canvas.screenshot({ path: shotPath });
  const tooltips = [];
  for (const [r, c] of focus.cells) {
    const x = geometry.left + geometry.x0 + (c + 0.5) * geometry.cellPx;
    const y = geometry.top + geometry.y0 + (r + 0.5) * geometry.cellPx;
    await page.mouse.move(x, y);
    tooltips.push(await page.$eval('.av-tooltip', (t) => ({ hidden: t.hidden, text: t.textContent,
      row: Number(t.dataset.row), col: Number(t.dataset.col), value: t.dataset.value })));
  }
  const title = await page.$eval('.av-focus-title', (t) => t.textContent);
  return { geometry, shot: shotPath, tooltips, title };
}

// Sorting by one column twice (largest first, then reversed) and focusing the top row.
async function metrics(page) {
  const column = 'entropy_bits';
  const readColumn = () => page.$$eval('table.av-metrics tbody tr', (rows, index) =>
    rows.map((tr) => ({ layer: Number(tr.dataset.layer), head: Number(tr.dataset.head),
      text: tr.children[index].textContent })), 2);
  const headers = await page.$$eval('table.av-metrics th', (th) => th.map((h) => h.dataset.column));
  await page.click(`table.av-metrics th[data-column="${column}"]`);
  const first = await readColumn();
  await page.click(`table.av-metrics th[data-column="${column}"]`);
  const second = await readColumn();
  await page.click('table.av-metrics tbody tr:nth-child(3)');
  const focusedTile = await page.$eval('canvas.av-tile.av-focused', (t) => [Number(t.dataset.layer), Number(t.dataset.head)]);
  const title = await page.$eval('.av-focus-title', (t) => t.textContent);
  return { headers, descending: first, ascending: second, clicked: second[2], focusedTile, title };
}

async function checkPage(browser, spec) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1500, height: 1200, deviceScaleFactor: 1 });
  const url = 'file://' + path.resolve(spec.path);
  const result = { requests: [], errors: [] };
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    if (request.url() === url || request.url().startsWith('data:')) return request.continue();
    result.requests.push(request.url());
    return request.abort();
  });
  page.on('console', (message) => { if (message.type() === 'error') result.errors.push(message.text()); });
  page.on('pageerror', (error) => result.errors.push(String(error)));
  await page.goto(url);
  await page.waitForSelector('.attnscope-viewer[data-ready="true"]', { timeout: 15000 });
  result.tiles = await page.$$eval('canvas.av-tile', (tiles) => tiles.map((t) => [Number(t.dataset.layer), Number(t.dataset.head)]));
  result.caption = await page.$eval('.av-caption', (c) => c.textContent);
  result.pooling = await page.$eval('.av-pooling', (c) => c.textContent);
  result.kinds = await page.$$eval('.av-kind option', (o) => o.map((x) => x.textContent));
  result.focus = [];
  for (let i = 0; i < (spec.focus || []).length; ++i) {
    result.focus.push(await focusMap(page, spec.focus[i], path.join(spec.shots, `focus${i}.png`)));
  }
  if (spec.metrics) result.metrics = await metrics(page);
  await page.close();
  return result;
}

// The page as a notebook shows it: its content inlined into a host page the way JupyterLab
// renders IPython.display.HTML (innerHTML, then each script re-created so that it runs), twice
// (two outputs on one notebook), and in an iframe as IPython.display.IFrame does.
async function embedded(browser, spec) {
  const page = await browser.newPage();
  const result = { errors: [], requests: [] };
  const allowed = ['file://' + path.resolve(spec.path), 'about:blank'];
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    const url = request.url();
    if (allowed.includes(url) || url.startsWith('data:')) return request.continue();
    result.requests.push(url);
    return request.abort();
  });
  page.on('console', (message) => { if (message.type() === 'error') result.errors.push(message.text()); });
  page.on('pageerror', (error) => result.errors.push(String(error)));
  await page.setContent('<div id="cell1"></div><div id="cell2"></div>');
  await page.evaluate((html) => {
    for (const id of ['cell1', 'cell2']) {
      const cell = document.getElementById(id);
      cell.innerHTML = html;
      for (const old of cell.querySelectorAll('script:not([type])')) {
        const script = document.createElement('script');
        script.textContent = old.textContent;
        old.replaceWith(script);
      }
    }
  }, fs.readFileSync(spec.path, 'utf8'));
  await page.waitForFunction(() => document.querySelectorAll('.attnscope-viewer[data-ready="true"]').length === 2,
    { timeout: 15000 });
  result.inline_tiles = await page.$$eval('.attnscope-viewer', (roots) => roots.map((r) => r.querySelectorAll('canvas.av-tile').length));
  // A file:// page may frame a file:// page; about:blank may not: the host is a file beside it.
  const host = path.join(path.dirname(path.resolve(spec.path)), 'notebook-host.html');
  fs.writeFileSync(host, `<!DOCTYPE html><iframe src="${path.basename(spec.path)}" width="1200" height="900"></iframe>`);
  const hostUrl = 'file://' + host;
  allowed.push(hostUrl);
  await page.goto(hostUrl);
  const frame = await (await page.$('iframe')).contentFrame();
  await frame.waitForSelector('.attnscope-viewer[data-ready="true"]', { timeout: 15000 });
  result.iframe_tiles = await frame.$$eval('canvas.av-tile', (tiles) => tiles.length);
  await page.close();
  return result;
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const puppeteer = require(path.join(spec.puppeteer, 'node_modules', 'puppeteer-core'));
  const browser = await puppeteer.launch({ executablePath: spec.chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'] });
  try {
    const pages = [];
    for (const pageSpec of spec.pages) pages.push(await checkPage(browser, pageSpec));
    const notebook = spec.embedded ? await embedded(browser, spec.embedded) : null;
    fs.writeFileSync(process.argv[3], JSON.stringify({ pages, notebook }));
  } finally {
    await browser.close();
  }
}

main().catch((error) => { console.error(error); process.exit(1); });
