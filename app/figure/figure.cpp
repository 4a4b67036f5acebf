// Figure descriptions: colour range, cell colours, builders from a trace, raw matrix output.
#include "figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <tuple>

namespace attnscope {
namespace {

bool isMasked(const FigurePanel& panel, size_t index) {
  return !panel.masked.empty() && panel.masked[index] != 0;
}

std::string plural(int64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

void checkIndex(int64_t value, int64_t count, const char* what, const char* owner) {
  if (value < 0 || value >= count) {
    throw InputError(std::string(what) + " " + std::to_string(value) + " is out of range (" + owner + " has " +
                     plural(count, what) + ": 0-" + std::to_string(count - 1) + ")");
  }
}

void checkLayerBatchHead(const ViewModel& view, int64_t layer, int64_t b, int64_t h) {
  checkIndex(layer, view.layers, "layer", "the model");
  checkIndex(b, view.B, "batch item", "the input");
  checkIndex(h, view.H, "head", "the model");
}

// " · ablate L1H2; knockout L0H1:3-2": a model run's interventions, named in every caption.
std::string interventionsNote(const ViewModel& view) {
  return view.interventions.empty() ? "" : " \u00b7 " + view.interventions;
}

// Fields every figure of batch item b shares. The mask in the subtitle is the layer's
// (imported maps have none to name).
Figure baseFigure(const ViewModel& view, int64_t layer, int64_t b) {
  Figure figure;
  figure.rows = view.L;
  figure.cols = view.S;
  figure.row_labels = view.query_tokens[b];
  figure.col_labels = view.key_tokens[b];
  const std::string& mask = view.maps[layer].mask_name;
  figure.subtitle = "batch item " + std::to_string(b) + (mask.empty() ? "" : " \u00b7 mask: " + mask) +
                    " \u00b7 L " + std::to_string(view.L) + " \u00d7 S " + std::to_string(view.S) + interventionsNote(view);
  return figure;
}

// The blocked cells of batch item b in a layer: [L, S], 1 = masked.
std::vector<uint8_t> maskedCells(const ViewModel& view, int64_t layer, int64_t b) {
  const int64_t n = view.L * view.S;
  std::vector<uint8_t> masked(n, 0);
  const uint8_t* allowed = view.allowed(layer, b);
  if (allowed)
    for (int64_t i = 0; i < n; ++i) masked[i] = allowed[i] ? 0 : 1;
  return masked;
}

FigurePanel mapPanel(const ViewModel& view, const float* values, int64_t layer, int64_t b) {
  FigurePanel panel;
  panel.values.assign(values, values + view.L * view.S);
  panel.masked = maskedCells(view, layer, b);
  return panel;
}

// The app's probability scale over the given layers' heads of batch item b: [min(0, min),
// max] ([smallest positive, max] on a log scale); [0, 1] / 1e-6 when there is nothing.
void setProbsRange(Figure& figure, const ViewModel& view, const std::vector<int64_t>& layers, int64_t b,
                   bool log_scale) {
  std::tie(figure.low, figure.high) = probsColorScale(view, layers, b, log_scale);
  figure.log_scale = log_scale;
}

std::string probsName(const ViewModel& view, int64_t layer) {
  return view.maps[layer].dropout_applied ? "Attention probabilities after dropout" : "Attention probabilities";
}

// ", head 3" with one layer (as before layers existed), ", layer 2, head 3" with several.
std::string mapName(const ViewModel& view, int64_t layer, int64_t h) {
  return (view.layers > 1 ? ", " + view.maps[layer].name : std::string()) + ", head " + std::to_string(h);
}

// An atlas row's name in tile titles: the layer's own name when it has one ("h.5", from
// bundle.json's layer_names), else "L5" (the default name is "layer 5").
std::string atlasLayerName(const ViewModel& view, int64_t layer) {
  const std::string& name = view.maps[layer].name;
  return name.empty() || name == "layer " + std::to_string(layer) ? "L" + std::to_string(layer) : name;
}

}  // namespace

std::pair<float, float> probsColorScale(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b,
                                        bool log_scale) {
  const MapRange range = view.probsRangeOver(b, layers);
  const float high = range.max > 0.0f ? range.max : 1.0f;
  const float low = log_scale ? (std::isfinite(range.min_positive) ? range.min_positive : 1e-6f) : std::min(0.0f, range.min);
  return {low, high};
}

std::pair<float, float> scoresColorScale(const ViewModel& view, int64_t layer, int64_t b, int64_t h) {
  const float max_abs = view.scoresRange(layer, b, h).abs_max;
  return max_abs > 0.0f ? std::pair<float, float>{-max_abs, max_abs} : std::pair<float, float>{-1.0f, 1.0f};
}

void setAutoRange(Figure& figure, RangeKind kind) {
  float max_value = 0.0f;
  float max_abs = 0.0f;
  for (const FigurePanel& panel : figure.panels) {
    for (size_t i = 0; i < panel.values.size(); ++i) {
      const float v = panel.values[i];
      if (isMasked(panel, i) || !std::isfinite(v)) continue;
      max_value = std::max(max_value, v);
      max_abs = std::max(max_abs, std::fabs(v));
    }
  }
  switch (kind) {
    case RangeKind::Probability:
      figure.low = 0.0f;
      figure.high = max_value > 0.0f ? max_value : 1.0f;
      break;
    case RangeKind::Score:
      figure.low = max_abs > 0.0f ? -max_abs : -1.0f;
      figure.high = max_abs > 0.0f ? max_abs : 1.0f;
      break;
    case RangeKind::Mask:
      figure.low = 0.0f;
      figure.high = 1.0f;
      break;
  }
}

int64_t defaultCellPx(int64_t rows, int64_t cols, size_t panels) {
  const int64_t target = panels > 1 ? 256 : 512;
  const int64_t longer = std::max<int64_t>(1, std::max(rows, cols));
  return std::max<int64_t>(1, (target + longer - 1) / longer);
}

int64_t effectiveCellPx(const Figure& figure) {
  return figure.cell_px > 0 ? figure.cell_px
                            : defaultCellPx(figure.rows, figure.cols, figure.panels.size());
}

std::pair<float, float> colorRange(const Figure& figure) {
  if (figure.low && figure.high) return {*figure.low, *figure.high};
  float low = INFINITY, high = -INFINITY;
  for (const FigurePanel& panel : figure.panels) {
    for (size_t i = 0; i < panel.values.size(); ++i) {
      if (isMasked(panel, i) || !std::isfinite(panel.values[i])) continue;
      low = std::min(low, panel.values[i]);
      high = std::max(high, panel.values[i]);
    }
  }
  if (!(low <= high)) low = 0.0f, high = 1.0f;
  return {figure.low.value_or(low), figure.high.value_or(high)};
}

int colorIndex(const Figure& figure, float value) {
  const auto [low, high] = colorRange(figure);
  if (figure.log_scale) {
    // As the shader: log10 of values floored at 1e-30.
    const auto log10Floor = [](float v) { return std::log10(std::max(v, 1e-30f)); };
    return colormapIndex(log10Floor(value), log10Floor(low), log10Floor(high));
  }
  return colormapIndex(value, low, high);
}

Rgb cellColor(const Figure& figure, const FigurePanel& panel, int64_t row, int64_t col) {
  const size_t index = static_cast<size_t>(row * figure.cols + col);
  if (isMasked(panel, index)) {
    // As the shader: no hatch on 1 px cells, where it would only read as noise.
    const bool hatch = effectiveCellPx(figure) >= 2 && (row + col) % 2 == 0;
    return hatch ? kMaskedHatchColor : kMaskedColor;
  }
  return colormapTable(figure.colormap)[colorIndex(figure, panel.values[index])];
}

Figure probsFigure(const ViewModel& view, int64_t layer, int64_t b, int64_t h, Colormap map, bool log_scale) {
  checkLayerBatchHead(view, layer, b, h);
  Figure figure = baseFigure(view, layer, b);
  figure.title = probsName(view, layer) + mapName(view, layer, h);
  figure.value_label = "probability";
  figure.colormap = map;
  figure.panels.push_back(mapPanel(view, view.probs(layer, b, h), layer, b));
  setProbsRange(figure, view, {layer}, b, log_scale);
  return figure;
}

Figure scoresFigure(const ViewModel& view, int64_t layer, int64_t b, int64_t h) {
  checkLayerBatchHead(view, layer, b, h);
  if (!view.hasScores())
    throw InputError(std::string("scores: ") + viewSourceName(view.source) + " maps hold probabilities only");
  Figure figure = baseFigure(view, layer, b);
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4g", view.maps[layer].scale);
  figure.title = "Attention scores (QK^T \u00d7 " + std::string(scale) + ")" + mapName(view, layer, h);
  figure.value_label = "score";
  figure.colormap = Colormap::Diverging;
  figure.panels.push_back(mapPanel(view, view.scores(layer, b, h), layer, b));
  std::tie(figure.low, figure.high) = scoresColorScale(view, layer, b, h);
  return figure;
}

Figure acrossLayersFigure(const ViewModel& view, MapKind kind, int64_t layer, int64_t b, Colormap map) {
  checkLayerBatchHead(view, layer, b, 0);
  const AcrossLayerMaps* maps = view.acrossLayers(kind);
  if (!maps) throw std::logic_error(std::string(mapKindName(kind)) + " figure: its maps are not built");
  Figure figure = baseFigure(view, layer, b);
  figure.title = "Attention " + acrossLayersTitle(kind, view.maps[layer].name);
  figure.value_label = mapKindInfo(kind).value_label;
  figure.row_axis = "output position";
  figure.col_axis = "input token";
  figure.colormap = map;
  FigurePanel panel;
  panel.values.assign(maps->map(layer, b), maps->map(layer, b) + view.L * view.L);
  figure.panels.push_back(std::move(panel));
  setAutoRange(figure, RangeKind::Probability);
  return figure;
}

Figure maskFigure(const ViewModel& view, int64_t layer, int64_t b, Colormap map) {
  checkLayerBatchHead(view, layer, b, 0);
  if (!view.hasMask()) throw InputError(std::string("mask: ") + viewSourceName(view.source) + " maps have no mask");
  Figure figure = baseFigure(view, layer, b);
  figure.title = view.layers > 1 ? "Attention mask, " + view.maps[layer].name : "Attention mask";
  figure.value_label = "1 = may attend, blocked = grey";
  figure.ticks = {{0.0f, "0"}, {1.0f, "1"}};
  figure.colormap = map;
  FigurePanel panel;
  panel.masked = maskedCells(view, layer, b);
  for (uint8_t blocked : panel.masked) panel.values.push_back(blocked ? 0.0f : 1.0f);
  figure.panels.push_back(std::move(panel));
  setAutoRange(figure, RangeKind::Mask);
  return figure;
}

Figure gridFigure(const ViewModel& view, const std::vector<int64_t>& layers, int64_t b, Colormap map,
                  bool log_scale) {
  if (layers.empty()) throw InputError("grid: no layers chosen");
  for (int64_t layer : layers) checkLayerBatchHead(view, layer, b, 0);
  Figure figure = baseFigure(view, layers[0], b);
  const bool atlas = view.layers > 1;
  figure.title = probsName(view, layers[0]) + ", all " + std::to_string(view.H) + " heads" +
                 (atlas ? " \u00d7 " + plural(static_cast<int64_t>(layers.size()), "layer") : "");
  figure.value_label = "probability";
  figure.colormap = map;
  for (int64_t layer : layers)
    for (int64_t h = 0; h < view.H; ++h) {
      figure.panels.push_back(mapPanel(view, view.probs(layer, b, h), layer, b));
      figure.panels.back().title = (atlas ? atlasLayerName(view, layer) + " H" + std::to_string(h) : "head " + std::to_string(h)) +
                                   (view.ablation(layer, h) == kNotAblated ? "" : " ablated");
    }
  // One layer: today's square-ish head grid. Several: rows = layers, columns = heads.
  figure.grid_columns = atlas ? view.H : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(view.H))));
  setProbsRange(figure, view, layers, b, log_scale);
  return figure;
}

Figure tiledWindowFigure(const std::string& what, const ViewModel& view, int64_t layer, int64_t b, int64_t h,
                         const CellWindow& w, Colormap map, bool log_scale) {
  checkLayerBatchHead(view, layer, b, h);
  const TiledMaps& m = *view.tiled;
  if (w.rows * w.cols > kMaxTiledExportCells)
    throw InputError(what + ": the zoomed window has " + std::to_string(w.rows) + " x " + std::to_string(w.cols) +
                     " cells; a tiled map exports at most " + std::to_string(kMaxTiledExportCells) +
                     " exact cells: zoom in further");
  const Tile tile = computeTile(m.layer(layer), b, h, w.row0, w.rows, w.col0, w.cols);
  Figure figure;
  figure.rows = w.rows;
  figure.cols = w.cols;
  figure.row_labels.assign(m.query_tokens[b].begin() + w.row0, m.query_tokens[b].begin() + w.row0 + w.rows);
  figure.col_labels.assign(m.key_tokens[b].begin() + w.col0, m.key_tokens[b].begin() + w.col0 + w.cols);
  figure.subtitle = "batch item " + std::to_string(b) + " \u00b7 mask: " + view.maps[layer].mask_name + " \u00b7 L " +
                    std::to_string(m.L) + " \u00d7 S " + std::to_string(m.S) + " \u00b7 zoomed: queries " +
                    std::to_string(w.row0) + "-" + std::to_string(w.row0 + w.rows - 1) + ", keys " +
                    std::to_string(w.col0) + "-" + std::to_string(w.col0 + w.cols - 1) + " (exact, from tiles)" +
                    interventionsNote(view);
  FigurePanel panel;
  const FloatBuffer& values = what == "scores" ? tile.scores.data : tile.probs.data;
  panel.values.assign(values.begin(), values.end());
  panel.masked.resize(tile.allowed.data.size());
  for (size_t n = 0; n < panel.masked.size(); ++n) panel.masked[n] = tile.allowed.data[n] ? 0 : 1;
  figure.panels.push_back(std::move(panel));
  // The whole map's scale, as on screen: the overview keeps every block's maximum.
  if (what == "scores") {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.4g", view.maps[layer].scale);
    figure.title = "Attention scores (QK^T \u00d7 " + std::string(scale) + ")" + mapName(view, layer, h);
    figure.value_label = "score";
    figure.colormap = Colormap::Diverging;
    const float abs_max = view.scoresRange(layer, b, h).abs_max;
    figure.low = -abs_max, figure.high = abs_max;
  } else {
    figure.title = probsName(view, layer) + mapName(view, layer, h);
    figure.value_label = "probability";
    figure.colormap = map;
    setProbsRange(figure, view, {layer}, b, log_scale);
  }
  return figure;
}

void cropFigure(Figure& figure, const CellWindow& window) {
  if (window.whole()) return;
  const CellWindow& w = window;
  if (w.row0 < 0 || w.rows < 1 || w.row0 + w.rows > figure.rows || w.col0 < 0 || w.cols < 1 ||
      w.col0 + w.cols > figure.cols)
    throw InputError("export window rows [" + std::to_string(w.row0) + ", " + std::to_string(w.row0 + w.rows) +
                     ") x keys [" + std::to_string(w.col0) + ", " + std::to_string(w.col0 + w.cols) +
                     ") is outside the [" + std::to_string(figure.rows) + ", " + std::to_string(figure.cols) + "] map");
  const auto [low, high] = colorRange(figure);  // the whole map's scale, as on screen
  figure.low = low;
  figure.high = high;
  auto crop = [&](const auto& cells) {
    std::decay_t<decltype(cells)> out;
    if (cells.empty()) return out;
    out.reserve(static_cast<size_t>(w.rows * w.cols));
    for (int64_t r = w.row0; r < w.row0 + w.rows; ++r) {
      const auto first = cells.begin() + r * figure.cols + w.col0;
      out.insert(out.end(), first, first + w.cols);
    }
    return out;
  };
  for (FigurePanel& panel : figure.panels) {
    panel.values = crop(panel.values);
    panel.masked = crop(panel.masked);
  }
  auto slice = [](const std::vector<std::string>& labels, int64_t first, int64_t count) {
    if (labels.empty()) return labels;
    return std::vector<std::string>(labels.begin() + first, labels.begin() + first + count);
  };
  figure.row_labels = slice(figure.row_labels, w.row0, w.rows);
  figure.col_labels = slice(figure.col_labels, w.col0, w.cols);
  figure.subtitle += " \u00b7 zoomed: queries " + std::to_string(w.row0) + "-" + std::to_string(w.row0 + w.rows - 1) +
                     " of " + std::to_string(figure.rows) + ", keys " + std::to_string(w.col0) + "-" +
                     std::to_string(w.col0 + w.cols - 1) + " of " + std::to_string(figure.cols);
  figure.rows = w.rows;
  figure.cols = w.cols;
}

Tensor matrixTensor(const Figure& figure) {
  Tensor tensor(figure.panels.size() == 1
                    ? Shape{figure.rows, figure.cols}
                    : Shape{static_cast<int64_t>(figure.panels.size()), figure.rows, figure.cols});
  auto out = tensor.data.begin();
  for (const FigurePanel& panel : figure.panels) out = std::copy(panel.values.begin(), panel.values.end(), out);
  return tensor;
}

namespace {

std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// Shortest text that reads back as the same float32; non-finite as -inf / inf / nan.
std::string csvNumber(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  return text;
}

std::string labelOrIndex(const std::vector<std::string>& labels, int64_t i) {
  return i < static_cast<int64_t>(labels.size()) ? labels[i] : std::to_string(i);
}

}  // namespace

std::string matrixCsv(const Figure& figure) {
  const bool grid = figure.panels.size() > 1;
  std::string csv = grid ? "head,query\\key" : "query\\key";
  for (int64_t c = 0; c < figure.cols; ++c) csv += "," + csvField(labelOrIndex(figure.col_labels, c));
  csv += "\n";
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    for (int64_t r = 0; r < figure.rows; ++r) {
      if (grid) csv += std::to_string(p) + ",";
      csv += csvField(labelOrIndex(figure.row_labels, r));
      for (int64_t c = 0; c < figure.cols; ++c) {
        csv += "," + csvNumber(figure.panels[p].values[r * figure.cols + c]);
      }
      csv += "\n";
    }
  }
  return csv;
}

}  // namespace attnscope
