// The panels of the main window. Each draws one fixed-position ImGui window (no docking)
// inside the rectangle panelRect() gives it, reading and writing only the AppState.
#pragma once

#include <imgui.h>

#include "gui/render/heatmap_widget.h"
#include "gui/render/token_text.h"
#include "gui/render/widgets.h"
#include "gui/shell/app_state.h"

namespace attnscope {

enum class Panel { Controls, HeadGrid, Metrics, Focus, Predictions, Mask, Pipeline, Stepper, StatusBar };

// Layout filling the main viewport (the borders between panels can be dragged:
// ViewState::panel_sizes, clamped here to the window): controls left, head grid (with the head metrics
// table right of it) over the focus view in the centre, mask over pipeline on the right
// (a trained model's predictions above them; the KV-cache stepper, when open, between
// them), status line along the bottom.
struct PanelRect {
  ImVec2 pos, size;
};
PanelRect panelRect(const AppState& state, Panel panel);
// Begin() for a panel window at its rectangle (End() as usual).
bool beginPanelWindow(const AppState& state, const char* title, Panel panel, ImGuiWindowFlags extra_flags = 0);

// The tabs other features add to `panel`'s tab bar, in the registry's order (shell/feature_registry.cpp).
void drawPanelTabs(AppState& state, Panel panel);

void drawStatusBar(AppState& state);
void drawHelpOverlay(AppState& state);
void drawToast(AppState& state);
void drawNotice(AppState& state);

// The canvas heatmaps draw on (GL state, widget rectangles).
HeatmapCanvas heatmapCanvas(AppState& state);
// What every map shows of the shown result: the hovered cell (crosshair; off for maps whose
// cells are not the shared hover's), the stale or in-progress overlay.
void showResultState(const AppState& state, HeatmapView& view, bool crosshair = true);

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
