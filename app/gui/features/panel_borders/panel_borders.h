// The borders between panels: dragging one resizes the panels on both sides
// (ViewState::panel_sizes, kept in view.json; the layout clamps them to the window).
#pragma once

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

struct PanelBordersState {
  int dragged = -1;         // index of the border held by the mouse, -1 = none
  float grab_offset = 0.0f;  // pointer minus border when it was picked up (no jump on the first move)
};

// Before the panels: the border under the pointer shows a resize cursor and a line; a drag
// moves it, and its release saves the layout a second later (with the settings).
void updatePanelBorders(AppState& state);
// State-log keys: panels ({name: [x, y, w, h]} as laid out this frame), panel_sizes (the
// dragged fractions, 0 = automatic), border_dragged (the held border's name, "" = none).
void panelBordersToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
