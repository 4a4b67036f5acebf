// The HTML export: one self-contained page (app/html/viewer.{html,js,css}, embedded at build
// time) with the view's maps quantized to 16 bits per cell (each map with its own range),
// byte planes deflated with zlib and base64-encoded; the page inflates them with the
// browser's DecompressionStream. No GL, nothing fetched by the page.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "figure.h"
#include "analysis/head_table.h"
#include "view/downsample.h"

namespace attnscope {
namespace {

#include "embedded_viewer.inc"

using nlohmann::json;

constexpr uint16_t kMaskedCode = 65535;  // codes 0..65534 span a map's [lo, hi]
constexpr double kLevels = 65534.0;

// One kind of map the page can show: a row of this table.
struct HtmlKind {
  const char* name;   // "probs"
  const char* title;  // the page's map choice
  const char* label;  // value name in the tooltip and on the colour bar
  MapKind map_kind;   // pooling rule (largest |v| for scores)
};
constexpr HtmlKind kHtmlKinds[] = {
    {"probs", "probabilities", "probability", MapKind::Probs},
    {"scores", "scores", "score", MapKind::Scores},
};

bool hasKind(const ViewModel& view, const HtmlKind& kind) {
  return kind.map_kind != MapKind::Scores || view.hasScores();
}

// The stored [rows, cols] cells of one map: masked cells -inf, pooled (the app's texture
// rule) when rows/cols are below L/S.
std::vector<float> storedMap(const ViewModel& view, const HtmlKind& kind, int64_t layer, int64_t b, int64_t h,
                             int64_t rows, int64_t cols) {
  const float* values = kind.map_kind == MapKind::Scores ? view.scores(layer, b, h) : view.probs(layer, b, h);
  const MaskedMap map{values, view.allowed(layer, b), view.L, view.S, view.S};
  if (rows < view.L || cols < view.S) {
    const Tensor pooled = kind.map_kind == MapKind::Scores ? maxAbsPool2d(map, rows, cols) : maxPool2d(map, rows, cols);
    return std::vector<float>(pooled.data.begin(), pooled.data.end());
  }
  std::vector<float> cells(values, values + view.L * view.S);
  if (map.allowed)
    for (size_t i = 0; i < cells.size(); ++i)
      if (!map.allowed[i]) cells[i] = -INFINITY;
  return cells;
}

// Appends one map's 16-bit codes as two byte planes (low bytes, then high bytes) and
// returns its [lo, hi]: the range of its finite cells; other cells get kMaskedCode.
std::pair<float, float> appendQuantized(const std::vector<float>& cells, std::string& out) {
  float lo = INFINITY, hi = -INFINITY;
  for (float v : cells)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = hi = 0.0f;
  const size_t n = cells.size(), start = out.size();
  out.resize(start + 2 * n);
  for (size_t i = 0; i < n; ++i) {
    const float v = cells[i];
    const uint16_t code = !std::isfinite(v) ? kMaskedCode
                          : hi > lo        ? static_cast<uint16_t>(std::lround((double(v) - lo) / (double(hi) - lo) * kLevels))
                                           : 0;
    out[start + i] = static_cast<char>(code & 0xff);
    out[start + n + i] = static_cast<char>(code >> 8);
  }
  return {lo, hi};
}

// Raw deflate of in[0, n), the 32 KiB before it as its dictionary, ending on a byte boundary
// (Z_SYNC_FLUSH) or with the final block (Z_FINISH).
std::string deflatePiece(const char* in, size_t n, size_t dictionary, bool last) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw InputError("html export: zlib deflateInit2 failed");
  if (dictionary > 0)
    deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(in - dictionary), static_cast<uInt>(dictionary));
  std::string out(deflateBound(&z, n) + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  if (status != (last ? Z_STREAM_END : Z_OK)) throw InputError("html export: zlib deflate failed (" + std::to_string(status) + ")");
  return out;
}

// One zlib stream of raw, its pieces deflated across the threads as pigz does (each primed
// with the 32 KiB before it, so the ratio stays that of one stream): the compression was a
// tenth of a long export, on one core.
std::string deflateBytes(const std::string& raw) {
  constexpr size_t kPiece = size_t{1} << 20, kWindow = size_t{32} << 10;
  const int64_t pieces = std::max<int64_t>(1, static_cast<int64_t>((raw.size() + kPiece - 1) / kPiece));
  std::vector<std::string> deflated(static_cast<size_t>(pieces));
  std::vector<uLong> checks(static_cast<size_t>(pieces));
#pragma omp parallel for schedule(dynamic) if (pieces > 1)
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t begin = static_cast<size_t>(i) * kPiece, n = std::min(kPiece, raw.size() - begin);
    deflated[i] = deflatePiece(raw.data() + begin, n, std::min(begin, kWindow), i + 1 == pieces);
    checks[i] = adler32(adler32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(raw.data() + begin), static_cast<uInt>(n));
  }
  std::string out = "\x78\x9c";  // zlib header: deflate, 32 KiB window, default level
  uLong check = adler32(0L, Z_NULL, 0);
  for (int64_t i = 0; i < pieces; ++i) {
    out += deflated[i];
    const size_t begin = static_cast<size_t>(i) * kPiece;
    check = adler32_combine(check, checks[i], static_cast<z_off_t>(std::min(kPiece, raw.size() - begin)));
  }
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((check >> shift) & 0xff);
  return out;
}

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = std::min<size_t>(3, bytes.size() - i);
    uint32_t word = 0;
    for (size_t k = 0; k < 3; ++k) word = word << 8 | (k < left ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= left ? kAlphabet[(word >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// Every shown kind's maps of the chosen layers at [rows, cols]: the base64 payload and each
// map's quantization range ([kind][layer * H + head]).
struct EncodedMaps {
  int64_t rows = 0, cols = 0;
  std::string base64;
  std::vector<std::vector<std::pair<float, float>>> quant;
};

EncodedMaps encodeMaps(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b, int64_t rows,
                       int64_t cols) {
  EncodedMaps encoded{rows, cols, {}, {}};
  std::string raw;
  for (const HtmlKind& kind : kHtmlKinds) {
    if (!hasKind(view, kind)) continue;
    encoded.quant.emplace_back();
    for (int64_t layer : layers)
      for (int64_t h = 0; h < view.H; ++h)
        encoded.quant.back().push_back(appendQuantized(storedMap(view, kind, layer, b, h, rows, cols), raw));
  }
  encoded.base64 = base64(deflateBytes(raw));
  return encoded;
}

// Full resolution up to the app's texture side (kTextureMaxSide), pooled further while the
// payload is over the budget. Layers compress about alike, so a few evenly spaced ones choose
// the side first (their size times layers / probed): the whole payload is then compressed
// about once (at 1,000 tokens of GPT-2 it was compressed at 256 and again at 153 per side).
EncodedMaps encodeWithinBudget(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b,
                               size_t budget_bytes) {
  constexpr size_t kProbeLayers = 2;
  int64_t side = kTextureMaxSide;
  // The side after a payload of `bytes` at `side` (rows x cols, the longer `longer`), or 0 when it fits.
  const auto next_side = [&](double bytes, int64_t longer) -> int64_t {
    if (bytes <= double(budget_bytes) || longer <= kHtmlMinPooledSide) return 0;
    const double shrink = 0.95 * std::sqrt(double(budget_bytes) / bytes);
    return std::max<int64_t>(kHtmlMinPooledSide, std::min<int64_t>(longer - 1, std::floor(longer * shrink)));
  };
  if (layers.size() > kProbeLayers) {
    std::vector<int64_t> probe;
    for (size_t i = 0; i < kProbeLayers; ++i) probe.push_back(layers[(2 * i + 1) * layers.size() / (2 * kProbeLayers)]);
    const double scale = double(layers.size()) / double(probe.size());
    for (;;) {
      const EncodedMaps sample = encodeMaps(view, probe, b, std::min(view.L, side), std::min(view.S, side));
      const int64_t smaller = next_side(double(sample.base64.size()) * scale, std::max(sample.rows, sample.cols));
      if (smaller == 0) break;
      side = smaller;
    }
  }
  for (;;) {
    EncodedMaps encoded = encodeMaps(view, layers, b, std::min(view.L, side), std::min(view.S, side));
    const int64_t smaller = next_side(double(encoded.base64.size()), std::max(encoded.rows, encoded.cols));
    if (smaller == 0) return encoded;
    side = smaller;
  }
}

// Axis labels of the stored cells: "12 'tok'", or for a pooled cell the positions it covers
// and the first one's token ("19-25 'tok'": the axis reads the token, the tooltip the range).
// Positions count from `offset` (a window's first row or key).
// Labels of cells whose positions are [firsts[c], firsts[c + 1]) of tokens, counted from `offset`.
std::vector<std::string> axisLabels(const std::vector<std::string>& tokens, const std::vector<int64_t>& firsts,
                                    int64_t offset = 0) {
  std::vector<std::string> labels;
  for (size_t c = 0; c + 1 < firsts.size(); ++c) {
    const int64_t from = firsts[c], last = firsts[c + 1] - 1;
    const std::string range = std::to_string(offset + from) + (from == last ? "" : "-" + std::to_string(offset + last));
    labels.push_back(range + " '" + tokens[from] + "'");
  }
  return labels;
}

// [cells + 1]: the first of n positions each of `cells` pooled cells covers, then n.
std::vector<int64_t> cellFirsts(int64_t n, int64_t cells) {
  std::vector<int64_t> firsts;
  for (int64_t c = 0; c <= cells; ++c) firsts.push_back(c * n / cells);
  return firsts;
}
std::vector<std::string> axisLabels(const std::vector<std::string>& tokens, int64_t cells, int64_t offset = 0) {
  return axisLabels(tokens, cellFirsts(static_cast<int64_t>(tokens.size()), cells), offset);
}

// The first real position of each of the page's `cells` rows (or columns) of batch item b's
// maps, [cells + 1]: a tiled view's maps are its overview, itself blocks of the real map.
std::vector<int64_t> pageFirsts(const ViewModel& view, int64_t cells, bool rows) {
  if (!view.tiled) return cellFirsts(rows ? view.L : view.S, cells);
  const TiledMaps& t = *view.tiled;
  std::vector<int64_t> firsts;
  for (int64_t block : cellFirsts(rows ? t.rows : t.cols, cells)) firsts.push_back(rows ? t.firstRow(block) : t.firstCol(block));
  return firsts;
}
const std::vector<std::string>& realTokens(const ViewModel& view, int64_t b, bool rows) {
  if (view.tiled) return (rows ? view.tiled->query_tokens : view.tiled->key_tokens)[b];
  return (rows ? view.query_tokens : view.key_tokens)[b];
}

// [[label, probability], ...] best first.
json guessesJson(const std::vector<TokenGuess>& guesses) {
  json out = json::array();
  for (const TokenGuess& g : guesses) out.push_back({g.label, g.prob});
  return out;
}

// A model run's top-5 after each position ([L]; null where the run did not unembed it), or null.
json predictionsJson(const ViewModel& view) {
  if (view.predictions.empty()) return nullptr;
  json rows = json::array();
  for (const NextTokenPredictions& p : view.predictions)
    rows.push_back(p.top.empty() ? json(nullptr) : json{{"top", guessesJson(p.top)}, {"actual", p.actual}});
  return {{"encoder", view.encoder}, {"rows", rows}};
}

// The logit lens's best guess at every layer and position ([N + 1][L]) when the run computed
// it whole; otherwise why not (a long text: `attnscope model run --lens` writes it); null
// without a model.
json lensJson(const ViewModel& view) {
  if (view.predictions.empty()) return nullptr;
  if (view.lens.cells.empty()) {
    const std::string why = view.lens.off_reason.empty() ? "logit lens not computed for this export" : view.lens.off_reason;
    return {{"note", why}};
  }
  json layers = json::array();
  for (int64_t l = 0; l < view.lens.layers; ++l) {
    json row = json::array();
    for (int64_t t = 0; t < view.lens.positions; ++t) {
      const std::vector<TokenGuess>& cell = view.lens.at(l, t);
      row.push_back(cell.empty() ? json(nullptr) : json{cell[0].label, cell[0].prob});
    }
    layers.push_back(row);
  }
  return {{"top", layers}};
}

std::string hexTable(const RgbTable& table) {
  std::string hex;
  char byte[3];
  for (const Rgb& rgb : table)
    for (uint8_t channel : rgb) std::snprintf(byte, sizeof byte, "%02x", channel), hex += byte;
  return hex;
}

json colorTables() {
  json tables = json::object();
  for (Colormap map : allColormaps()) tables[colormapName(map)] = hexTable(colormapTable(map));
  return tables;
}

// Colour scales per map ([layer * H + head]) as the app draws them: the focus view and the
// grid (probabilities: the focused layer's heads, and every layer's in the grid).
json kindScales(const ViewModel& view, const HtmlKind& kind, const std::vector<int64_t>& layers, int64_t b) {
  json scales = {{"focus", json::array()}, {"grid", json::array()}};
  const bool probs = kind.map_kind == MapKind::Probs;
  if (probs) scales["focus_log"] = scales["grid_log"] = json::array();
  for (int64_t layer : layers)
    for (int64_t h = 0; h < view.H; ++h) {
      if (!probs) {
        const auto scale = scoresColorScale(view, layer, b, h);
        scales["focus"].push_back({scale.first, scale.second});
        scales["grid"].push_back({scale.first, scale.second});
        continue;
      }
      for (const bool log : {false, true}) {
        const auto focus = probsColorScale(view, {layer}, b, log), grid = probsColorScale(view, layers, b, log);
        scales[log ? "focus_log" : "focus"].push_back({focus.first, focus.second});
        scales[log ? "grid_log" : "grid"].push_back({grid.first, grid.second});
      }
    }
  return scales;
}

json kindsJson(const ViewModel& view, const EncodedMaps& encoded, const std::vector<int64_t>& layers, int64_t b) {
  json kinds = json::array();
  size_t k = 0;
  for (const HtmlKind& kind : kHtmlKinds) {
    if (!hasKind(view, kind)) continue;
    json quant = json::array();
    for (const auto& range : encoded.quant[k]) quant.push_back({range.first, range.second});
    const bool scores = kind.map_kind == MapKind::Scores;
    kinds.push_back({{"name", kind.name}, {"title", kind.title}, {"label", kind.label}, {"quant", quant},
                     {"scale", kindScales(view, kind, layers, b)}, {"log_scale_allowed", !scores},
                     {"fixed_colormap", scores ? json(colormapName(Colormap::Diverging)) : json(nullptr)}});
    ++k;
  }
  return kinds;
}

// The head metrics table of batch item b (as the app's): every metric, NaN as null, and the group.
json metricsJson(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b) {
  json columns = json::array(), rows = json::array();
  const bool generation = view.first_generated >= 0;  // the gen_* columns: only over a generation
  for (const MetricInfo& info : headMetricInfos())
    if (generation || !isGenerationMetric(info))
      columns.push_back({{"name", info.name}, {"heading", info.heading}, {"description", info.description}});
  if (view.tiled && view.tiled->metric_sums.empty()) return {{"columns", columns}, {"rows", rows}};
  const HeadTable table = headTableOf(view);
  for (size_t index = 0; index < layers.size(); ++index)
    for (int64_t h = 0; h < view.H; ++h) {
      const int64_t layer = layers[index];
      const HeadMetrics& metrics = table.row(layer, h, b);
      json values = json::array();
      for (const MetricInfo& info : headMetricInfos()) {
        if (!generation && isGenerationMetric(info)) continue;
        const double v = metrics.*info.field;
        values.push_back(std::isfinite(v) ? json(v) : json(nullptr));
      }
      rows.push_back({{"layer", index}, {"head", h}, {"group", table.group(layer * view.H + h, b)},
                      {"values", values}});
    }
  return {{"columns", columns}, {"rows", rows}};
}

// The exact cells of one kind's map in the app's zoomed window (a tiled source computes them
// from Q and K), masked cells -inf; pooled like a texture when wider than kTextureMaxSide.
std::vector<float> windowCells(const ViewModel& view, const HtmlKind& kind, int64_t layer, int64_t b, int64_t h,
                               const CellWindow& window, int64_t rows, int64_t cols) {
  Figure figure = view.tiled ? tiledWindowFigure(kind.name, view, layer, b, h, window, Colormap::Viridis)
                  : kind.map_kind == MapKind::Scores ? scoresFigure(view, layer, b, h)
                                                      : probsFigure(view, layer, b, h, Colormap::Viridis);
  if (!view.tiled) cropFigure(figure, window);
  FigurePanel& panel = figure.panels[0];
  for (size_t i = 0; i < panel.values.size(); ++i)
    if (!panel.masked.empty() && panel.masked[i]) panel.values[i] = -INFINITY;
  if (rows == window.rows && cols == window.cols) return panel.values;
  const Tensor pooled = kind.map_kind == MapKind::Scores ? maxAbsPool2d(panel.values.data(), window.rows, window.cols, rows, cols)
                                                          : maxPool2d(panel.values.data(), window.rows, window.cols, rows, cols);
  return std::vector<float>(pooled.data.begin(), pooled.data.end());
}

// The focused map's zoomed window (real cells), stored beside the maps at full resolution
// (up to kTextureMaxSide per side) so that the page shows what the app showed zoomed.
json windowJson(const ViewModel& view, const HtmlRequest& request, int64_t page_layer, int64_t b) {
  const CellWindow window = clampWindow(request.window, view.mapL(), view.mapS());
  if (window.whole()) return nullptr;
  const int64_t layer = request.focus_layer, h = std::clamp<int64_t>(request.focus_head, 0, view.H - 1);
  const int64_t rows = std::min(window.rows, kTextureMaxSide), cols = std::min(window.cols, kTextureMaxSide);
  std::string raw;
  json kinds = json::array();
  for (const HtmlKind& kind : kHtmlKinds) {
    if (!hasKind(view, kind)) continue;
    const auto quant = appendQuantized(windowCells(view, kind, layer, b, h, window, rows, cols), raw);
    const bool probs = kind.map_kind == MapKind::Probs;
    const auto scale = probs ? probsColorScale(view, {layer}, b, false) : scoresColorScale(view, layer, b, h);
    const auto scale_log = probs ? probsColorScale(view, {layer}, b, true) : scale;
    kinds.push_back({{"quant", {quant.first, quant.second}}, {"scale", {scale.first, scale.second}},
                     {"scale_log", {scale_log.first, scale_log.second}}});
  }
  const auto slice = [](const std::vector<std::string>& tokens, int64_t first, int64_t count) {
    return std::vector<std::string>(tokens.begin() + first, tokens.begin() + first + count);
  };
  const auto& query_tokens = view.tiled ? view.tiled->query_tokens[b] : view.query_tokens[b];
  const auto& key_tokens = view.tiled ? view.tiled->key_tokens[b] : view.key_tokens[b];
  json labels = {{"rows", axisLabels(slice(query_tokens, window.row0, window.rows), rows, window.row0)},
                 {"cols", axisLabels(slice(key_tokens, window.col0, window.cols), cols, window.col0)}};
  return {{"layer", page_layer}, {"head", h}, {"row0", window.row0}, {"col0", window.col0},
          {"real_rows", window.rows}, {"real_cols", window.cols}, {"rows", rows}, {"cols", cols},
          {"row_labels", labels["rows"]}, {"col_labels", labels["cols"]}, {"kinds", kinds},
          {"maps", base64(deflateBytes(raw))}};
}

std::string poolingNote(const ViewModel& view, const EncodedMaps& encoded) {
  std::string note;
  if (view.tiled)
    note = "overview of L " + std::to_string(view.mapL()) + " \u00d7 S " + std::to_string(view.mapS()) +
           " (each cell a block of the real map)";
  if (encoded.rows == view.L && encoded.cols == view.S) return note;
  return (note.empty() ? "" : note + "; ") + "maps pooled from " + std::to_string(view.L) + " \u00d7 " +
         std::to_string(view.S) + " to " + std::to_string(encoded.rows) + " \u00d7 " + std::to_string(encoded.cols) +
         " cells (each cell the largest value of its block" +
         (view.hasScores() ? "; scores: the largest |v|)" : ")");
}

// Replaces the first marker at or after `from` and moves `from` past the value, so values
// (a token that spells a marker) are never searched again.
void replaceNext(std::string& text, size_t& from, const std::string& marker, const std::string& value) {
  const size_t at = text.find(marker, from);
  if (at == std::string::npos) throw std::logic_error("html template: no " + marker);
  text.replace(at, marker.size(), value);
  from = at + value.size();
}

// JSON safe inside <script>: no "</" (a token "</script>" would end the element).
std::string scriptSafe(std::string text) {
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) text.replace(at, 2, "<\\/");
  return text;
}

std::string htmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

}  // namespace

std::string renderViewHtml(const ViewModel& view, const HtmlRequest& request) {
  const std::vector<int64_t> layers = request.layers.empty() ? [&] {
    std::vector<int64_t> all;
    for (int64_t l = 0; l < view.layers; ++l) all.push_back(l);
    return all;
  }() : request.layers;
  const int64_t b = request.batch;
  if (b < 0 || b >= view.B) throw InputError("html export: batch item " + std::to_string(b) + " is out of range");
  const EncodedMaps encoded = encodeWithinBudget(view, layers, b, request.map_budget_bytes);
  const auto focused = std::find(layers.begin(), layers.end(), request.focus_layer);
  json names = json::array();
  for (int64_t layer : layers) names.push_back(view.maps[layer].name);
  json data = {
      {"version", ATTNSCOPE_VERSION}, {"H", view.H}, {"L", view.mapL()}, {"S", view.mapS()},
      {"rows", encoded.rows}, {"cols", encoded.cols}, {"layer_names", names},
      {"row_labels", axisLabels(realTokens(view, b, true), pageFirsts(view, encoded.rows, true))},
      {"col_labels", axisLabels(realTokens(view, b, false), pageFirsts(view, encoded.cols, false))},
      {"row_positions", pageFirsts(view, encoded.rows, true)},
      {"caption", {{"model", request.model}, {"source", request.source}, {"text", request.text},
                   {"mask", view.maps[layers[0]].mask_name}, {"batch_item", b}, {"B", view.B},
                   {"notes", view.notes}, {"interventions", view.interventions}}},
      {"pooling", poolingNote(view, encoded)},
      {"colormap_names", json::array()}, {"colormaps", colorTables()},
      {"masked_color", kMaskedColor}, {"masked_hatch_color", kMaskedHatchColor},
      {"colormap", colormapName(request.colormap)}, {"log_scale", request.log_scale},
      {"focus", {{"layer", focused == layers.end() ? 0 : focused - layers.begin()},
                 {"head", std::clamp<int64_t>(request.focus_head, 0, view.H - 1)}}},
      {"kinds", kindsJson(view, encoded, layers, b)},
      {"metrics", metricsJson(view, layers, b)},
      {"predictions", predictionsJson(view)}, {"lens", lensJson(view)},
      {"window", focused == layers.end() ? json(nullptr) : windowJson(view, request, focused - layers.begin(), b)},
      {"maps", encoded.base64}};
  for (Colormap map : allColormaps()) data["colormap_names"].push_back(colormapName(map));
  std::string page = kViewer_viewer_html;
  size_t from = 0;  // the markers in the order the template holds them
  replaceNext(page, from, "@ATTNSCOPE_TITLE@", htmlEscape("attnscope: " + request.model));
  replaceNext(page, from, "/*@ATTNSCOPE_CSS@*/", kViewer_viewer_css);
  replaceNext(page, from, "@ATTNSCOPE_DATA@", scriptSafe(data.dump()));
  replaceNext(page, from, "/*@ATTNSCOPE_JS@*/", kViewer_viewer_js);
  return page;
}

namespace {

std::string attributeEscape(const std::string& text) {
  std::string out;
  for (char c : htmlEscape(text)) out += c == '"' ? std::string("&quot;") : std::string(1, c);
  return out;
}

std::string hexColor(const Rgb& rgb) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return text;
}

// The colour bar: 11 swatches from low to high, each with its value.
std::string htmlColorBar(const Figure& figure) {
  const auto [low, high] = colorRange(figure);
  std::string bar = "<table class=\"bar\"><tr>";
  for (int k = 0; k <= 10; ++k) {
    const float v = low + (high - low) * static_cast<float>(k) / 10.0f;
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", static_cast<double>(v));
    bar += "<td style=\"background:" + hexColor(colormapColor(figure.colormap, v, low, high)) + "\">" + value + "</td>";
  }
  return bar + "</tr></table>\n";
}

}  // namespace

std::string renderFigureHtml(const Figure& figure) {
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + htmlEscape(figure.title) +
                     "</title>\n<style>body{font:13px sans-serif}td{min-width:2.2em;height:1.6em;text-align:center;"
                     "font-size:10px}table.bar td{min-width:3em}th{font-weight:normal;font-size:11px}</style></head><body>\n"
                     "<h1 class=\"title\">" + htmlEscape(figure.title) + "</h1>\n<p class=\"subtitle\">" +
                     htmlEscape(figure.subtitle) + "</p>\n<p class=\"value-label\">colour: " + htmlEscape(figure.value_label) +
                     " (rows: " + htmlEscape(figure.row_axis) + ", columns: " + htmlEscape(figure.col_axis) + ")</p>\n" +
                     htmlColorBar(figure) + "<table class=\"matrix\">\n<tr><th></th>";
  for (int64_t c = 0; c < figure.cols; ++c)
    page += "<th>" + htmlEscape(c < static_cast<int64_t>(figure.col_labels.size()) ? figure.col_labels[c] : std::to_string(c)) + "</th>";
  page += "</tr>\n";
  const FigurePanel& panel = figure.panels.front();
  for (int64_t r = 0; r < figure.rows; ++r) {
    page += "<tr><th>" + htmlEscape(r < static_cast<int64_t>(figure.row_labels.size()) ? figure.row_labels[r] : std::to_string(r)) + "</th>";
    for (int64_t c = 0; c < figure.cols; ++c) {
      const float v = panel.values[r * figure.cols + c];
      char value[32] = "nan";
      if (std::isfinite(v)) std::snprintf(value, sizeof value, "%.9g", static_cast<double>(v));
      page += "<td data-value=\"" + std::string(value) + "\" style=\"background:" + hexColor(cellColor(figure, panel, r, c)) +
              "\" title=\"" + attributeEscape((r < static_cast<int64_t>(figure.row_labels.size()) ? figure.row_labels[r] : "") +
                                                " " + (c < static_cast<int64_t>(figure.col_labels.size()) ? figure.col_labels[c] : "")) +
              ": " + value + "\"></td>";
    }
    page += "</tr>\n";
  }
  return page + "</table>\n</body></html>\n";
}

}  // namespace attnscope
