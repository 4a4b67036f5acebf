// The panels of the main window. Each draws one fixed-position ImGui window (no docking)
// inside the rectangle panelRect() gives it, reading and writing only the AppState. A panel
// is a feature's row in the registry (shell/feature_registry.cpp) with a place: the shell
// lays the places out and knows no panel by name.
#pragma once

#include <imgui.h>

#include <utility>
#include <vector>

#include "gui/render/heatmap_widget.h"
#include "gui/render/token_text.h"
#include "gui/render/widgets.h"
#include "gui/shell/app_state.h"

namespace attnscope {

// The window's columns, left to right (their widths: ViewState::panel_sizes, the borders
// the user drags); the status line runs along the bottom, below them.
enum class Column { None, Left, Centre, Right };

// What a panel's size hook sees: its column's width and the panel area's height (the window
// minus the status line), and the height the bands above it in its column took.
struct ColumnSpace {
  float width = 0, height = 0, above = 0;
};

// Where a panel sits by default, a column of its registry row. Panels stack top to bottom in
// their column by `order` (the rows leave gaps of 10: a new panel between two takes a number
// between theirs); panels of one order share a band side by side.
struct PanelPlace {
  Column column = Column::None;  // None: not a panel
  int order = 0;
  // Its band's height; null: the band takes what the column's other bands leave.
  float (*height)(const AppState&, const ColumnSpace&) = nullptr;
  // Its width in a shared band, taken from the band's right edge; null: the band's rest.
  float (*width)(const AppState&, const ColumnSpace&) = nullptr;
  // Shown now (else 0 high, in its place); null: always.
  bool (*shown)(const AppState&) = nullptr;
};

// Layout filling the main viewport from the registry's places (the borders between panels
// can be dragged: ViewState::panel_sizes, clamped to the window): controls left, head grid
// (with the head metrics table right of it) over the focus view in the centre, mask over
// pipeline on the right (a trained model's predictions above them; the KV-cache stepper,
// when open, between them), status line along the bottom.
struct PanelRect {
  ImVec2 pos, size;
};
// The rectangle of the panel named `panel` (its registry row's name); empty for an unknown name.
PanelRect panelRect(const AppState& state, const char* panel);
// Every panel's rectangle under its name, in the registry's order.
std::vector<std::pair<const char*, PanelRect>> panelRects(const AppState& state);
PanelRect statusBarRect();
// Begin() for a panel window at its rectangle (End() as usual).
bool beginPanelWindow(const AppState& state, const char* title, const char* panel, ImGuiWindowFlags extra_flags = 0);
bool beginPanelWindow(const char* title, const PanelRect& rect, ImGuiWindowFlags extra_flags = 0);

// Smallest panel sizes a dragged border leaves, in pixels.
inline constexpr float kMinColumn = 180.0f, kMinCentre = 2 * kMinColumn, kMinBand = 80.0f;  // centre: grid + table
// The one clamp of a size the user dragged (or view.json held): `fraction` of `total` within
// [lo, hi] pixels; the automatic size, untouched, when unset or not a positive number.
float chosenSize(float fraction, float total, float automatic, float lo, float hi);

// The parts other features add to `panel` (the registry's rows whose part_of names it: the
// predictions' tabs, the control panel's model sections), in the registry's order.
void drawPanelParts(AppState& state, const char* panel);
// The part named `part` of `panel` (a tab the panel chose: the focus panel's Compare).
void drawPanelPart(AppState& state, const char* panel, const char* part);

void drawStatusBar(AppState& state);
void drawHelpOverlay(AppState& state);
void drawToast(AppState& state);
void drawNotice(AppState& state);

// The canvas heatmaps draw on (GL state, widget rectangles).
HeatmapCanvas heatmapCanvas(AppState& state);
// What every map shows of the shown result: the hovered cell (crosshair; off for maps whose
// cells are not the shared hover's), the stale or in-progress overlay.
void showResultState(const AppState& state, HeatmapView& view, bool crosshair = true);

// The "overview" checkbox of the head grid and the head metrics panel (view.overview_chosen).
void drawOverviewToggle(AppState& state, const ViewModel& view);
// A head's ablate toggle at the cursor (head tiles, head-table rows of a model run): a small
// button cycling on -> ablate (zero) -> ablate (mean) -> on, labelled with the run's state
// ("-", "0", "m"; view.ablation), recorded under `name`.
void drawAblateToggle(AppState& state, const ViewModel& view, const std::string& name, int64_t layer, int64_t head);
// The colour of an active intervention: the status bar's names, struck tiles, crossed cells.
inline const ImVec4 kInterventionColor(1.0f, 0.55f, 0.35f, 1.0f);

// Shared look: section header, red error text, orange warning text, a small spinner.
void sectionHeader(const char* text);
void errorText(const std::string& message);
void warningText(const std::string& message);
void drawSpinner(float radius);
// The same, recorded under `name` (the spinner's rectangle too).
void errorText(WidgetRects& rects, const std::string& name, const std::string& message);
void warningText(WidgetRects& rects, const std::string& name, const std::string& message);
void drawSpinner(WidgetRects& rects, const std::string& name, float radius);
// Marker colour of head group g (groups of similar heads), shared by the table and the grid.
ImU32 groupColor(int64_t group);
// SameLine() when an item `width` pixels wide still fits on the current line.
void sameLineIfFits(float width);
// `text` cut to whole UTF-8 characters + ".." so that it is at most `width` pixels wide
// (just ".." when not even one character fits).
std::string fitText(const std::string& text, float width);
// Index of the first of `candidates` (longest first) that fits in `width` pixels, else the
// last. Labels in a row pick their form from the widest one, so that they all look alike.
size_t firstFitting(const std::vector<std::string>& candidates, float width);

}  // namespace attnscope
