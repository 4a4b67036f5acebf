// Where everything of a figure goes: title, tiles, token labels, colour bar and ticks.
#include "layout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>

namespace attnscope::figure_detail {
namespace {

constexpr double kMargin = 16;
constexpr double kGap = 6;
constexpr double kTitleSize = 17;
constexpr double kSubtitleSize = 12.5;
constexpr double kPanelTitleSize = 13;
constexpr double kAxisSize = 12;
constexpr double kTickSize = 11;
constexpr int kBarWidth = 18;
constexpr double kTickLength = 4;
constexpr double kTileGapX = 18;  // between grid tiles
constexpr double kTileGapY = 12;
constexpr int kMaxSide = 16384;     // pixels on either side of the canvas
constexpr size_t kMaxLabelChars = 16;  // longer token labels are cut with an ellipsis
// Baseline offset that centres lower- and upper-case text on a line: ~ half the cap height.
constexpr double kCentreBaseline = 0.35;
constexpr Rgb kOutline = {60, 60, 60};

// Decodes the next code point of UTF-8 text (invalid bytes count as one code point each).
uint32_t nextCodePoint(const std::string& text, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  int extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (i + extra >= text.size()) extra = 0;  // truncated sequence
  uint32_t cp = extra == 0 ? lead : lead & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  i += 1 + extra;
  return cp;
}

std::string truncateLabel(const std::string& text) {
  size_t i = 0, count = 0, cut = 0;
  while (i < text.size()) {
    nextCodePoint(text, i);
    ++count;
    if (count == kMaxLabelChars - 1) cut = i;
  }
  return count > kMaxLabelChars ? text.substr(0, cut) + "\u2026" : text;
}

std::string labelText(const std::vector<std::string>& labels, int64_t i) {
  return i < static_cast<int64_t>(labels.size()) ? truncateLabel(labels[i]) : std::to_string(i);
}

class TextMeasure {
 public:
  TextMeasure()
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1), cairo_surface_destroy),
        cr_(cairo_create(surface_.get()), cairo_destroy) {
    setFigureFontOptions(cr_.get());
  }
  double width(const std::string& text, double size, bool bold = false) {
    selectFont(cr_.get(), text, size, bold);
    cairo_text_extents_t extents;
    cairo_text_extents(cr_.get(), text.c_str(), &extents);
    return extents.x_advance;
  }

 private:
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface_;
  std::unique_ptr<cairo_t, void (*)(cairo_t*)> cr_;
};

// Smallest of 1, 2, 5, 10, 20, 50, ... that is >= minimum: labels at round indices.
int64_t roundStride(int64_t minimum) {
  for (int64_t decade = 1;; decade *= 10) {
    for (int64_t step : {decade, 2 * decade, 5 * decade}) {
      if (step >= minimum) return step;
    }
  }
}

struct Tick {
  float value;
  std::string text;
};

// Round values (1, 2 or 5 x 10^k apart) inside [low, high], at most max_count of them.
std::vector<Tick> linearTicks(float low, float high, int max_count) {
  const double span = static_cast<double>(high) - low;
  if (!(span > 0) || !std::isfinite(span)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", static_cast<double>(low));
    return {{low, text}};
  }
  double step = std::pow(10.0, std::floor(std::log10(span)) - 1);
  for (int k = 0; ; ++k) {
    const double candidate = step * std::array<double, 3>{1, 2, 5}[k % 3] * std::pow(10.0, k / 3);
    const double first = std::ceil(low / candidate - 1e-6), last = std::floor(high / candidate + 1e-6);
    if (last - first + 1 <= std::max(2, max_count)) {
      step = candidate;
      break;
    }
  }
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  std::vector<Tick> ticks;
  for (double k = std::ceil(low / step - 1e-6); k <= std::floor(high / step + 1e-6); k += 1) {
    const double v = k * step;
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", decimals, std::fabs(v) < step * 1e-6 ? 0.0 : v);
    ticks.push_back({static_cast<float>(v), text});
  }
  return ticks;
}

// Powers of ten inside the log range (its ends when it spans less than a decade).
std::vector<Tick> logTicks(float low, float high) {
  std::vector<Tick> ticks;
  low = std::max(low, 1e-30f);
  high = std::max(high, low);
  for (int e = static_cast<int>(std::ceil(std::log10(low) - 1e-6));
       e <= static_cast<int>(std::floor(std::log10(high) + 1e-6)); ++e) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", std::pow(10.0, e));
    ticks.push_back({static_cast<float>(std::pow(10.0, e)), text});
  }
  if (ticks.size() < 2) {
    ticks.clear();
    for (float v : {low, high}) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", static_cast<double>(v));
      ticks.push_back({v, text});
    }
  }
  return ticks;
}

// Position of a value along the colour bar, 0 = bottom (low), 1 = top (high).
double barFraction(const Figure& figure, float value) {
  const auto [low, high] = colorRange(figure);
  if (figure.log_scale) {
    const double log_low = std::log10(std::max(low, 1e-30f)), log_high = std::log10(std::max(high, 1e-30f));
    return log_high > log_low ? (std::log10(value) - log_low) / (log_high - log_low) : 0.5;
  }
  return (static_cast<double>(value) - low) / (static_cast<double>(high) - low);
}

void validate(const Figure& figure) {
  if (figure.rows <= 0 || figure.cols <= 0 || figure.panels.empty()) {
    throw InputError("figure: nothing to draw (the matrix is " + std::to_string(figure.rows) + " x " +
                     std::to_string(figure.cols) + " with " + std::to_string(figure.panels.size()) +
                     " panels)");
  }
  const size_t n = static_cast<size_t>(figure.rows * figure.cols);
  for (const FigurePanel& panel : figure.panels) {
    if (panel.values.size() != n || (!panel.masked.empty() && panel.masked.size() != n)) {
      throw InputError("figure: a panel holds " + std::to_string(panel.values.size()) +
                       " values but the matrix is " + std::to_string(figure.rows) + " x " +
                       std::to_string(figure.cols));
    }
  }
}

}  // namespace

const char* fontFor(const std::string& utf8) {
  for (size_t i = 0; i < utf8.size();) {
    const uint32_t cp = nextCodePoint(utf8, i);
    const bool cjk = (cp >= 0x1100 && cp <= 0x11FF) ||  // Hangul Jamo
                     (cp >= 0x2E80 && cp <= 0x9FFF) ||  // CJK radicals, punctuation, kana, ideographs
                     (cp >= 0xAC00 && cp <= 0xD7AF) ||  // Hangul syllables
                     (cp >= 0xF900 && cp <= 0xFAFF) ||  // CJK compatibility ideographs
                     (cp >= 0xFE30 && cp <= 0xFE4F) ||  // CJK compatibility forms
                     (cp >= 0xFF00 && cp <= 0xFFEF) ||  // full-width forms
                     cp >= 0x20000;                     // CJK extensions
    if (cjk) return "WenQuanYi Micro Hei";
  }
  return "DejaVu Sans";
}

void setFigureFontOptions(cairo_t* cr) {
  std::unique_ptr<cairo_font_options_t, void (*)(cairo_font_options_t*)> options(
      cairo_font_options_create(), cairo_font_options_destroy);
  cairo_font_options_set_hint_metrics(options.get(), CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(options.get(), CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_antialias(options.get(), CAIRO_ANTIALIAS_GRAY);
  cairo_set_font_options(cr, options.get());
}

void selectFont(cairo_t* cr, const std::string& utf8, double size, bool bold) {
  cairo_select_font_face(cr, fontFor(utf8), CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

namespace {

// A figure's geometry, worked out step by step (grid, labels, bands, tiles) before and
// while its items are placed.
struct FigurePlan {
  // The grid of tiles: one matrix of rows x cols cells per panel.
  int64_t cell = 1, panels = 1, grid_cols = 1, grid_rows = 1;
  double matrix_w = 0, matrix_h = 0, grid_w = 0;
  // Token labels (every stride-th one) and the colour bar's ticks, measured.
  double label_size = 0, row_label_w = 0, col_label_h = 0;
  int64_t stride = 1;
  std::vector<Tick> ticks;
  double tick_label_w = 0, value_label_w = 0;
  // Horizontal bands, left to right.
  double shift = 0, matrix_x = 0, centre_x = 0, tick_label_x = 0, value_band_left = 0;
  int bar_x = 0;
  // Vertical extent of the tiles (the colour bar's too).
  double grid_top = 0, grid_bottom = 0;
};

// The grid of tiles; refuses absurd sizes from a rough canvas size, before any text is measured.
FigurePlan planGrid(const Figure& figure) {
  FigurePlan plan;
  plan.cell = effectiveCellPx(figure);
  plan.panels = static_cast<int64_t>(figure.panels.size());
  plan.grid_cols = std::clamp<int64_t>(figure.grid_columns, 1, plan.panels);
  plan.grid_rows = (plan.panels + plan.grid_cols - 1) / plan.grid_cols;
  plan.matrix_w = static_cast<double>(figure.cols) * static_cast<double>(plan.cell);
  plan.matrix_h = static_cast<double>(figure.rows) * static_cast<double>(plan.cell);
  plan.grid_w = plan.grid_cols * plan.matrix_w + (plan.grid_cols - 1) * kTileGapX;
  if (plan.grid_w > kMaxSide || plan.grid_rows * plan.matrix_h > kMaxSide) {
    throw InputError("figure would be over " + std::to_string(kMaxSide) +
                     " px on a side at " + std::to_string(plan.cell) +
                     " px per cell; choose a smaller cell size (--cell-px)");
  }
  return plan;
}

// Token labels: as large as the cells allow, every stride-th one when cells are small.
void measureTokenLabels(const Figure& figure, TextMeasure& measure, FigurePlan& plan) {
  const int64_t cell = plan.cell;
  plan.label_size = std::clamp(cell * 0.7, 8.0, 14.0);
  plan.stride = roundStride(static_cast<int64_t>(std::ceil(plan.label_size * 1.3 / cell)));
  for (int64_t r = 0; r < figure.rows; r += plan.stride) {
    plan.row_label_w = std::max(plan.row_label_w, measure.width(labelText(figure.row_labels, r), plan.label_size));
  }
  for (int64_t c = 0; c < figure.cols; c += plan.stride) {
    plan.col_label_h = std::max(plan.col_label_h, measure.width(labelText(figure.col_labels, c), plan.label_size));
  }
}

// Colour bar ticks (count limited by the bar height) and their label width.
void measureTicks(const Figure& figure, TextMeasure& measure, FigurePlan& plan) {
  const auto [low, high] = colorRange(figure);
  const double bar_h_estimate = plan.grid_rows * plan.matrix_h;
  const int max_ticks = std::max(2, static_cast<int>(bar_h_estimate / (kTickSize * 2.2)));
  plan.ticks = figure.log_scale ? logTicks(low, high) : linearTicks(low, high, std::min(max_ticks, 9));
  if (!figure.ticks.empty()) {
    plan.ticks.clear();
    for (const auto& [value, text] : figure.ticks) plan.ticks.push_back({value, text});
  }
  for (const Tick& tick : plan.ticks) plan.tick_label_w = std::max(plan.tick_label_w, measure.width(tick.text, kTickSize));
  plan.value_label_w = measure.width(figure.value_label, kAxisSize);
}

// Horizontal bands, left to right: axis name, row labels, tiles, colour bar, ticks, value
// name. Returns the canvas width.
int placeBands(const Figure& figure, TextMeasure& measure, FigurePlan& plan) {
  const double axis_band = kAxisSize * 1.1;  // a vertical axis name
  const double row_labels_right = kMargin + axis_band + kGap + plan.row_label_w;
  plan.matrix_x = std::ceil(row_labels_right + kGap);
  const double grid_centre_x = plan.matrix_x + plan.grid_w / 2;
  const double title_w = std::max(measure.width(figure.title, kTitleSize, true),
                                  measure.width(figure.subtitle, kSubtitleSize));
  const double key_axis_w = measure.width(figure.col_axis, kAxisSize);
  // Shift right when the centred title (or key axis name) would run past the left margin.
  plan.shift = std::ceil(std::max(0.0, kMargin - (grid_centre_x - std::max(title_w, key_axis_w) / 2)));
  plan.matrix_x += plan.shift;
  plan.centre_x = grid_centre_x + plan.shift;
  plan.bar_x = static_cast<int>(std::ceil(plan.matrix_x + plan.grid_w + 3 * kGap));
  plan.tick_label_x = plan.bar_x + kBarWidth + kTickLength + 3;
  plan.value_band_left = plan.tick_label_x + plan.tick_label_w + kGap;
  const double content_right = plan.value_band_left + axis_band + kMargin;
  return static_cast<int>(std::ceil(std::max(content_right, plan.centre_x + title_w / 2 + kMargin)));
}

// Title and subtitle, centred. Returns the y where the tiles' block starts.
double addTitleBlock(const Figure& figure, const FigurePlan& plan, Layout& layout) {
  const double title_baseline = kMargin + kTitleSize * 0.95;
  layout.texts.push_back({figure.title, plan.centre_x, title_baseline, kTitleSize, true, false,
                          Anchor::Middle, kTextColor, fontFor(figure.title)});
  double y = title_baseline + kTitleSize * 0.3;
  if (!figure.subtitle.empty()) {
    const double subtitle_baseline = y + kSubtitleSize * 1.2;
    layout.texts.push_back({figure.subtitle, plan.centre_x, subtitle_baseline, kSubtitleSize, false, false,
                            Anchor::Middle, kSubtleText, fontFor(figure.subtitle)});
    y = subtitle_baseline + kSubtitleSize * 0.3;
  }
  return y + 2 * kGap;
}

// Query labels left of a tile whose matrix starts at (x, matrix_y).
void addRowLabels(const Figure& figure, const FigurePlan& plan, double x, double matrix_y, Layout& layout) {
  for (int64_t r = 0; r < figure.rows; r += plan.stride) {
    const std::string text = labelText(figure.row_labels, r);
    layout.texts.push_back({text, x - kGap, matrix_y + (r + 0.5) * plan.cell + kCentreBaseline * plan.label_size,
                            plan.label_size, false, false, Anchor::End, kTextColor, fontFor(text)});
  }
}

// Key labels (vertical) under a tile whose matrix starts at (x, matrix_y).
void addColumnLabels(const Figure& figure, const FigurePlan& plan, double x, double matrix_y, Layout& layout) {
  for (int64_t c = 0; c < figure.cols; c += plan.stride) {
    const std::string text = labelText(figure.col_labels, c);
    layout.texts.push_back({text, x + (c + 0.5) * plan.cell + kCentreBaseline * plan.label_size,
                            matrix_y + plan.matrix_h + kGap, plan.label_size, false, true, Anchor::End,
                            kTextColor, fontFor(text)});
  }
}

// Tiles, row by row, from y down. Key labels go under every tile that has no tile below
// it; query labels left of the first column. Sets the grid's top and bottom; returns the
// y below the last row of tiles and its labels.
double addTiles(const Figure& figure, FigurePlan& plan, double y, Layout& layout) {
  const double panel_title_h = plan.panels > 1 ? std::ceil(kPanelTitleSize * 1.5) : 0;
  for (int64_t gr = 0; gr < plan.grid_rows; ++gr) {
    const double matrix_y = std::ceil(y + panel_title_h);
    if (gr == 0) plan.grid_top = matrix_y;
    plan.grid_bottom = matrix_y + plan.matrix_h;
    bool row_has_key_labels = false;
    for (int64_t gc = 0; gc < plan.grid_cols; ++gc) {
      const int64_t p = gr * plan.grid_cols + gc;
      if (p >= plan.panels) break;
      const double x = plan.matrix_x + gc * (plan.matrix_w + kTileGapX);
      layout.panel_x.push_back(static_cast<int>(x));
      layout.panel_y.push_back(static_cast<int>(matrix_y));
      const std::string& title = figure.panels[p].title;
      if (!title.empty()) {
        layout.texts.push_back({title, x + plan.matrix_w / 2, matrix_y - kPanelTitleSize * 0.5, kPanelTitleSize,
                                true, false, Anchor::Middle, kTextColor, fontFor(title)});
      }
      if (gc == 0) addRowLabels(figure, plan, x, matrix_y, layout);
      if (p + plan.grid_cols >= plan.panels) {
        row_has_key_labels = true;
        addColumnLabels(figure, plan, x, matrix_y, layout);
      }
    }
    y = matrix_y + plan.matrix_h + (row_has_key_labels ? kGap + plan.col_label_h : 0) + kTileGapY;
  }
  return y - kTileGapY;
}

// Axis names: "query" rotated left of the labels, "key" under the last key labels (whose
// bottom is y). Returns the canvas bottom below them.
double addAxisNames(const Figure& figure, const FigurePlan& plan, double y, Layout& layout) {
  layout.texts.push_back({figure.row_axis, kMargin + plan.shift + kAxisSize * 0.8,
                          (plan.grid_top + plan.grid_bottom) / 2, kAxisSize, false, true, Anchor::Middle,
                          kSubtleText, fontFor(figure.row_axis)});
  const double key_baseline = y + kGap + kAxisSize;
  layout.texts.push_back({figure.col_axis, plan.centre_x, key_baseline, kAxisSize, false, false, Anchor::Middle,
                          kSubtleText, fontFor(figure.col_axis)});
  return key_baseline + kAxisSize * 0.3 + kMargin;
}

// Colour bar: pixel rows from the bottom (entry 0, the range low) to the top (entry 255,
// the range high), evenly spaced in colour-table entries; rows with the same entry merge
// into one rect. Then its outline, and ticks on the centre of the pixel row of their value.
void addColorbar(const Figure& figure, const FigurePlan& plan, Layout& layout) {
  const int bar_x = plan.bar_x;
  const int bar_top = static_cast<int>(plan.grid_top);
  const int bar_h = static_cast<int>(plan.grid_bottom - plan.grid_top);
  const double bar_span = std::max(1, bar_h - 1);
  const RgbTable& table = colormapTable(figure.colormap);
  const auto indexAt = [&](int row) {
    return static_cast<int>(std::floor((bar_h - 1 - row) / bar_span * 255.0 + 0.5));
  };
  for (int i = 0; i < bar_h;) {
    const int index = indexAt(i);
    int end = i + 1;
    while (end < bar_h && indexAt(end) == index) ++end;
    layout.colorbar.push_back({static_cast<double>(bar_x), static_cast<double>(bar_top + i),
                               static_cast<double>(kBarWidth), static_cast<double>(end - i), table[index]});
    i = end;
  }
  const double bx0 = bar_x - 0.5, bx1 = bar_x + kBarWidth + 0.5;
  const double by0 = bar_top - 0.5, by1 = bar_top + bar_h + 0.5;
  layout.lines.push_back({bx0, by0, bx1, by0, 1, kOutline});
  layout.lines.push_back({bx1, by0, bx1, by1, 1, kOutline});
  layout.lines.push_back({bx1, by1, bx0, by1, 1, kOutline});
  layout.lines.push_back({bx0, by1, bx0, by0, 1, kOutline});
  for (const Tick& tick : plan.ticks) {
    const double fraction = barFraction(figure, tick.value);
    if (!(fraction >= -1e-6 && fraction <= 1 + 1e-6)) continue;
    const double ty = bar_top + 0.5 + (1.0 - fraction) * bar_span;
    layout.lines.push_back({bx1, ty, bx1 + kTickLength, ty, 1, kOutline});
    layout.texts.push_back({tick.text, plan.tick_label_x, ty + kCentreBaseline * kTickSize, kTickSize, false, false,
                            Anchor::Start, kTextColor, fontFor(tick.text)});
  }
}

}  // namespace

Layout layoutFigure(const Figure& figure) {
  validate(figure);
  TextMeasure measure;
  Layout layout;
  FigurePlan plan = planGrid(figure);
  layout.cell_px = static_cast<int>(plan.cell);
  measureTokenLabels(figure, measure, plan);
  measureTicks(figure, measure, plan);
  layout.width = placeBands(figure, measure, plan);

  const double tiles_top = addTitleBlock(figure, plan, layout);
  const double tiles_bottom = addTiles(figure, plan, tiles_top, layout);
  const double bottom = addAxisNames(figure, plan, tiles_bottom, layout);
  addColorbar(figure, plan, layout);
  const double grid_middle = (plan.grid_top + plan.grid_bottom) / 2;
  layout.texts.push_back({figure.value_label, plan.value_band_left + kAxisSize * 0.8, grid_middle, kAxisSize, false,
                          true, Anchor::Middle, kSubtleText, fontFor(figure.value_label)});

  // The value caption may be longer than the bar is high.
  layout.height = static_cast<int>(std::ceil(std::max(bottom, grid_middle + plan.value_label_w / 2 + kMargin)));
  if (layout.width > kMaxSide || layout.height > kMaxSide) {
    throw InputError("figure would be " + std::to_string(layout.width) + " x " + std::to_string(layout.height) +
                     " px, over " + std::to_string(kMaxSide) + " px on a side; choose a smaller cell size (--cell-px)");
  }
  return layout;
}

}  // namespace attnscope::figure_detail

namespace attnscope {

FigureGeometry figureGeometry(const Figure& figure) {
  const figure_detail::Layout layout = figure_detail::layoutFigure(figure);
  return {layout.width, layout.height, layout.cell_px, layout.panel_x, layout.panel_y};
}

}  // namespace attnscope
