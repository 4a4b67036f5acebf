// Figure layout shared by the Cairo (PNG/PDF) and SVG renderers: every rect, line and
// text item with its final position, so all formats draw the same picture. Units are
// pixels (PNG) = points (PDF) = user units (SVG). Internal to the figure library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cairo.h>

#include "figure.h"

namespace attnscope::figure_detail {

struct RectItem {
  double x = 0, y = 0, w = 0, h = 0;
  Rgb color{};
};

struct LineItem {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  double width = 1;
  Rgb color{};
};

enum class Anchor { Start, Middle, End };

struct TextItem {
  std::string text;  // UTF-8
  double x = 0, y = 0;  // anchor point on the baseline
  double size = 12;     // font size (px)
  bool bold = false;
  bool vertical = false;  // rotated 90 deg counter-clockwise (reads bottom to top)
  Anchor anchor = Anchor::Start;
  Rgb color{};
  std::string font;  // font family chosen for the text's script
};

struct Layout {
  int width = 0, height = 0;
  int cell_px = 1;
  // Matrix origin of each panel: the top-left pixel of cell (0, 0). Cell (r, c) of panel p
  // covers [panel_x[p] + c * cell_px, +cell_px) x [panel_y[p] + r * cell_px, +cell_px);
  // renderers colour it with cellColor() (cells are not listed: a matrix may be 4096^2).
  std::vector<int> panel_x, panel_y;
  std::vector<RectItem> colorbar;  // one rect per run of pixel rows with the same table entry
  std::vector<LineItem> lines;   // tick marks and the colour bar outline
  std::vector<TextItem> texts;
};

inline constexpr Rgb kBackground = {255, 255, 255};
inline constexpr Rgb kTextColor = {20, 20, 20};
inline constexpr Rgb kSubtleText = {90, 90, 90};

// "DejaVu Sans", or "WenQuanYi Micro Hei" when the text holds CJK / Hangul / full-width
// characters (Cairo's toy font API does not fall back per glyph, so one font per text).
const char* fontFor(const std::string& utf8);

// Font options used for measuring and drawing, so PNG, PDF and SVG agree: no hinting of
// metrics (advances are not rounded to whole pixels).
void setFigureFontOptions(cairo_t* cr);
void selectFont(cairo_t* cr, const std::string& utf8, double size, bool bold);

// Throws InputError for an inconsistent figure or one too large to draw.
Layout layoutFigure(const Figure& figure);

}  // namespace attnscope::figure_detail
