// Figure descriptions: colour range, cell colours, builders from a trace, raw matrix output.
#include "figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope {
namespace {

bool isMasked(const FigurePanel& panel, size_t index) {
  return !panel.masked.empty() && panel.masked[index] != 0;
}

void checkBatchHead(const AttentionTrace& trace, int64_t b, int64_t h) {
  if (b < 0 || b >= trace.B) {
    throw InputError("batch item " + std::to_string(b) + " is out of range (the input has " +
                     std::to_string(trace.B) + " batch item" + (trace.B == 1 ? "" : "s") + ": 0-" +
                     std::to_string(trace.B - 1) + ")");
  }
  if (h < 0 || h >= trace.H) {
    throw InputError("head " + std::to_string(h) + " is out of range (the model has " +
                     std::to_string(trace.H) + " head" + (trace.H == 1 ? "" : "s") + ": 0-" +
                     std::to_string(trace.H - 1) + ")");
  }
}

// "causal+window:3" from the trace's mask components, "none" without any.
std::string maskDescription(const AttentionTrace& trace) {
  std::string text;
  for (const MaskComponent& component : trace.mask.components) {
    if (!text.empty()) text += "+";
    text += component.name;
  }
  return text.empty() ? "none" : text;
}

// Fields every figure of batch item b shares.
Figure baseFigure(const AttentionTrace& trace, int64_t b) {
  Figure figure;
  figure.rows = trace.L;
  figure.cols = trace.S;
  const size_t item = static_cast<size_t>(b);
  figure.row_labels = item < trace.batch_query_tokens.size() ? trace.batch_query_tokens[item] : trace.query_tokens;
  figure.col_labels = item < trace.batch_key_tokens.size() ? trace.batch_key_tokens[item] : trace.key_tokens;
  figure.subtitle = "batch item " + std::to_string(b) + " \u00b7 mask: " + maskDescription(trace) +
                    " \u00b7 L " + std::to_string(trace.L) + " \u00d7 S " + std::to_string(trace.S);
  return figure;
}

// One [L, S] slice of a [B, H, L, S] tensor.
std::vector<float> headSlice(const Tensor& tensor, const AttentionTrace& trace, int64_t b, int64_t h) {
  const int64_t n = trace.L * trace.S;
  const auto begin = tensor.data.begin() + (b * trace.H + h) * n;
  return std::vector<float>(begin, begin + n);
}

// The blocked cells of batch item b: [L, S], 1 = masked.
std::vector<uint8_t> maskedCells(const AttentionTrace& trace, int64_t b) {
  const int64_t n = trace.L * trace.S;
  std::vector<uint8_t> masked(n, 0);
  if (trace.mask.allowed.empty()) return masked;
  for (int64_t i = 0; i < n; ++i) masked[i] = trace.mask.allowed.data[b * n + i] ? 0 : 1;
  return masked;
}

FigurePanel headPanel(const AttentionTrace& trace, const Tensor& tensor, int64_t b, int64_t h) {
  FigurePanel panel;
  panel.values = headSlice(tensor, trace, b, h);
  panel.masked = maskedCells(trace, b);
  return panel;
}

// The app's probability scale for batch item b: [0, max] over the allowed cells of every
// head ([smallest positive, max] on a log scale); [0, 1] / 1e-6 when there is nothing.
void setProbsRange(Figure& figure, const AttentionTrace& trace, int64_t b, bool log_scale) {
  const int64_t cells = trace.L * trace.S;
  const std::vector<uint8_t> masked = maskedCells(trace, b);
  const Tensor& probs = trace.probsAfterDropout();
  float max_value = 0.0f, min_positive = INFINITY;
  for (int64_t h = 0; h < trace.H; ++h) {
    const float* values = probs.data.data() + (b * trace.H + h) * cells;  // [L, S]
    for (int64_t c = 0; c < cells; ++c) {
      if (masked[c]) continue;
      max_value = std::max(max_value, values[c]);
      if (values[c] > 0.0f) min_positive = std::min(min_positive, values[c]);
    }
  }
  figure.high = max_value > 0.0f ? max_value : 1.0f;
  figure.low = log_scale ? (std::isfinite(min_positive) ? min_positive : 1e-6f) : 0.0f;
  figure.log_scale = log_scale;
}

std::string probsName(const AttentionTrace& trace) {
  return trace.dropout_applied ? "Attention probabilities after dropout" : "Attention probabilities";
}

}  // namespace

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

Figure probsFigure(const AttentionTrace& trace, int64_t b, int64_t h, Colormap map, bool log_scale) {
  checkBatchHead(trace, b, h);
  Figure figure = baseFigure(trace, b);
  figure.title = probsName(trace) + ", head " + std::to_string(h);
  figure.value_label = "probability";
  figure.colormap = map;
  figure.panels.push_back(headPanel(trace, trace.probsAfterDropout(), b, h));
  setProbsRange(figure, trace, b, log_scale);
  return figure;
}

Figure scoresFigure(const AttentionTrace& trace, int64_t b, int64_t h) {
  checkBatchHead(trace, b, h);
  Figure figure = baseFigure(trace, b);
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4g", trace.scale);
  figure.title = "Attention scores (QK^T \u00d7 " + std::string(scale) + "), head " + std::to_string(h);
  figure.value_label = "score";
  figure.colormap = Colormap::Diverging;
  figure.panels.push_back(headPanel(trace, trace.scores, b, h));
  setAutoRange(figure, RangeKind::Score);
  return figure;
}

Figure maskFigure(const AttentionTrace& trace, int64_t b, Colormap map) {
  checkBatchHead(trace, b, 0);
  Figure figure = baseFigure(trace, b);
  figure.title = "Attention mask";
  figure.value_label = "1 = may attend, blocked = grey";
  figure.ticks = {{0.0f, "0"}, {1.0f, "1"}};
  figure.colormap = map;
  FigurePanel panel;
  panel.masked = maskedCells(trace, b);
  for (uint8_t blocked : panel.masked) panel.values.push_back(blocked ? 0.0f : 1.0f);
  figure.panels.push_back(std::move(panel));
  setAutoRange(figure, RangeKind::Mask);
  return figure;
}

Figure gridFigure(const AttentionTrace& trace, int64_t b, Colormap map, bool log_scale) {
  checkBatchHead(trace, b, 0);
  Figure figure = baseFigure(trace, b);
  figure.title = probsName(trace) + ", all " + std::to_string(trace.H) + " heads";
  figure.value_label = "probability";
  figure.colormap = map;
  for (int64_t h = 0; h < trace.H; ++h) {
    figure.panels.push_back(headPanel(trace, trace.probsAfterDropout(), b, h));
    figure.panels.back().title = "head " + std::to_string(h);
  }
  figure.grid_columns = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(trace.H))));
  setProbsRange(figure, trace, b, log_scale);
  return figure;
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
