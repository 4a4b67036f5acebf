#include "gui/shell/shortcuts.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <vector>

#include "gui/jobs/compute_sync.h"
#include "gui/jobs/export_jobs.h"
#include "gui/shell/feature_registry.h"

namespace attnscope {
namespace {

// The grid ordered by the head table: Left/Right step to the previous / next head in the
// table's order, Up/Down one grid row (grid_columns heads) back / on; stops at the ends.
ViewFocus tableOrderTarget(const AppState& state, int key) {
  const std::vector<int64_t>& order = state.view.table.order;
  ViewFocus focus = state.view.focus;
  const int64_t H = focusLimits(state).heads;
  const auto at = std::find(order.begin(), order.end(), focus.layer * H + focus.head);
  if (at == order.end()) return focus;
  const int64_t step = key == GLFW_KEY_LEFT ? -1 : key == GLFW_KEY_RIGHT ? 1
                       : key == GLFW_KEY_UP ? -state.view.grid_columns : key == GLFW_KEY_DOWN ? state.view.grid_columns : 0;
  const int64_t k = (at - order.begin()) + step;
  if (step == 0 || k < 0 || k >= static_cast<int64_t>(order.size())) return focus;
  focus.layer = order[k] / H;
  focus.head = order[k] % H;
  return focus;
}

// Arrow keys move across the grid: one layer, Left/Right step through the heads and
// Up/Down move one grid row; several layers, Left/Right move across heads and Up/Down
// across layers; the grid ordered by the table, through the table's order. setFocus
// clamps at the edges.
ViewFocus arrowTarget(const AppState& state, int key) {
  if (gridFollowsTable(state)) return tableOrderTarget(state, key);
  const bool several_layers = focusLimits(state).layers > 1;
  ViewFocus focus = state.view.focus;
  if (key == GLFW_KEY_LEFT) focus.head -= 1;
  if (key == GLFW_KEY_RIGHT) focus.head += 1;
  const int64_t step = key == GLFW_KEY_UP ? -1 : key == GLFW_KEY_DOWN ? 1 : 0;
  if (several_layers) focus.layer += step;
  else focus.head += step * state.view.grid_columns;
  return focus;
}

// Keys that work everywhere, also while a text box has the keyboard (no text box uses
// them): F1, Ctrl+Q, Ctrl+S (Shift: every head, Alt: the window; a feature may take the plain
// one: a shown generation), Ctrl+Shift+H (HTML). True when `press` was one.
bool globalKey(AppState& state, const KeyPress& press, bool popup_open) {
  const bool ctrl = (press.mods & GLFW_MOD_CONTROL) != 0;
  const bool shift = (press.mods & GLFW_MOD_SHIFT) != 0, alt = (press.mods & GLFW_MOD_ALT) != 0;
  if (press.key == GLFW_KEY_F1) {
    state.ui.show_help = !state.ui.show_help;
    markStateChanged(state);
    return true;
  }
  if (ctrl && press.key == GLFW_KEY_Q) {
    state.ui.quit_requested = true;
    return true;
  }
  if (ctrl && press.key == GLFW_KEY_S) {
    if (popup_open) return true;
    if (alt) state.exports.screenshot_requested = true;  // read after this frame is rendered
    else if (shift || !featuresKey(state, press)) requestFigureExport(state.exports, state.view, shift ? "grid" : "view");
    return true;
  }
  if (ctrl && shift && press.key == GLFW_KEY_H) {  // the HTML page of every layer and head
    if (!popup_open) requestFigureExport(state.exports, state.view, "html");
    return true;
  }
  return false;
}

// Escape closes overlays (help, then a feature's: the open dialog), else cancels a tiled
// overview or a load, even from a text box, and leaves the text box, keeping its text (called
// before any widget this frame: the text box never sees the key, which in ImGui 1.86 would
// revert the edit).
void escapeKey(AppState& state, const KeyPress& press) {
  UiState& ui = state.ui;
  if (ImGui::GetIO().WantTextInput) ImGui::SetWindowFocus(nullptr);
  if (ui.show_help) ui.show_help = false;
  else if (!featuresKey(state, press)) cancelCompute(state.compute);  // a tiled overview or a load
  markStateChanged(state);
}

}  // namespace

void handleShortcuts(AppState& state) {
  UiState& ui = state.ui;
  std::vector<KeyPress> presses;
  presses.swap(ui.key_presses);
  const bool popup_open = ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId);
  const bool typing = ImGui::GetIO().WantTextInput;  // the other keys belong to the text box
  for (const KeyPress& press : presses) {
    if (press.key == GLFW_KEY_ESCAPE) escapeKey(state, press);
    if (press.key == GLFW_KEY_ESCAPE || globalKey(state, press, popup_open) || typing) continue;
    if (featuresKey(state, press)) continue;  // F5 and the stepper's keys, Ctrl+O, ...
    const bool ctrl = (press.mods & GLFW_MOD_CONTROL) != 0;
    if (!state.compute.view || popup_open || ctrl) continue;
    if (press.key == GLFW_KEY_0 || press.key == GLFW_KEY_KP_0) setZoom(state, CellWindow{});  // whole map again
    setFocus(state, arrowTarget(state, press.key));
  }
}

}  // namespace attnscope
