// Heatmap and colour bar widgets, shaped like ImPlot's PlotHeatmap/ColormapScale: the
// values live in an R32F texture and the heatmap fragment shader colours them, so a
// 4096 x 4096 map costs one quad, never one ImGui rectangle per cell.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <imgui.h>

#include "gui/render/gl_resources.h"
#include "gui/render/widget_rects.h"
#include "view/colormap.h"
#include "view/view_model.h"

namespace attnscope {

struct ValueRange {
  float low = 0.0f, high = 1.0f;
};

// Everything a heatmap draws, handed in by the panel (the widget reads no app state).
struct HeatmapView {
  std::string name;                // layout log name; "##" + name is the ImGui id
  unsigned int texture = 0;        // R32F [rows, cols]; -inf = masked
  int64_t rows = 0, cols = 0;      // cells shown (a zoomed window's size)
  int64_t row0 = 0, col0 = 0;      // map cell of the top-left shown cell (zoomed window)
  ImVec2 uv0{0, 0}, uv1{1, 1};     // the part of the texture shown (a tiled overview cropped to the window)
  Colormap colormap = Colormap::Viridis;
  std::optional<ValueRange> range; // unset: [0, 1]; callers pass the trace's auto range
  bool log_scale = false;          // colour log10(v); range is then in value units
  const char* label_format = "%.3g";
  bool outlined = false;           // draw a highlight border (focused head)
  bool overlapped = false;         // a widget drawn over it takes the pointer there (a tile's toggle)
  int64_t hover_row = -1, hover_col = -1;  // map cell to draw the crosshair on (-1: none)
  int64_t marked_row = -1;         // map row outlined in the pin colour (a pinned query row; -1: none)
  std::string stale;               // non-empty: the maps are out of date; dimmed, with this reason
  double progress = -1.0;          // >= 0: a newer overview is computing (fraction done); dimmed
  const char* progress_what = "new overview";  // ... or what else is in progress ("loading the model")
};

// Where heatmaps and colour bars draw: the GL program, lookup textures and per-frame draw
// parameters, and the widget rectangles they record themselves in.
struct HeatmapCanvas {
  GpuState& gpu;
  WidgetRects& rects;
};

// Runs inside ImGui's renderer: switches to the heatmap program for the next image. Its
// data is a HeatmapDrawParams (the redraw cache compares them between frames).
void bindHeatmapProgram(const ImDrawList* list, const ImDrawCmd* cmd);

struct HeatmapHit {
  bool hovered = false;
  bool clicked = false;
  int64_t row = -1, col = -1;      // map cell under the pointer when hovered (row0/col0 added)
  double row_f = 0, col_f = 0;     // the pointer in map cells, fractional (zoom anchor)
  bool active = false;             // held by the mouse (a drag)
};

// Draws the heatmap filling `size` at the cursor (one item), records its rectangle under
// view.name and reports the hovered cell.
HeatmapHit drawHeatmap(HeatmapCanvas canvas, const HeatmapView& view, ImVec2 size);

// A vertical colour bar for `map` over `range` with three tick labels to its right
// (recorded under `name` when one is given).
struct ColorBarView {
  Colormap colormap = Colormap::Viridis;
  ValueRange range;
  bool log_scale = false;
  const char* label_format = "%.3g";
  std::string name;
};
// The strip is kColorBarStripWidth wide, its tick labels kColorBarLabelGap right of it.
constexpr float kColorBarStripWidth = 14.0f, kColorBarLabelGap = 5.0f;
void drawColorBar(HeatmapCanvas canvas, const ColorBarView& bar, ImVec2 size);
// Width the bar takes with its tick labels (to size the room beside a map).
float colorBarWidth(const ColorBarView& bar);

// Which labels of a token list an axis shows: [first, first + count). count 0 = none.
struct LabelSpan {
  const std::vector<std::string>* labels = nullptr;
  int64_t first = 0, count = 0;
};
// The indices of the first and last label drawn on each axis (-1 = none drawn).
struct AxisLabelsDrawn {
  int64_t first_row = -1, last_row = -1, first_col = -1, last_col = -1;
};

// Width of the widest label, at most cap (row labels of a heatmap).
float widestLabel(const std::vector<std::string>& labels, float cap);
// The widest query and key labels of one batch item of a view, measured once per result and
// batch item (not per frame), shared by every view that draws token axes.
// Widest token label of the shown result's batch item, measured once per result (not per
// frame: at L = 2048 that is thousands of text measurements).
struct LabelWidths {
  uint64_t view = 0;  // the ViewModel measured (its stamp)
  int64_t batch_item = -1;
  float query = 0.0f, key = 0.0f;
};
const LabelWidths& tokenLabelWidths(LabelWidths& cache, const ViewModel& view, int64_t batch_item);

// Token labels beside a heatmap at screen rectangle [min, max]: query labels left of the
// rows (right-aligned), key labels under the columns (rotated 90 degrees); both thinned
// to every k-th label when cells are smaller than a line of text.
AxisLabelsDrawn drawAxisLabels(const LabelSpan& rows, const LabelSpan& cols, ImVec2 min, ImVec2 max);

}  // namespace attnscope
