// What the views show and where the pointer is. The focused (layer, head, batch item) is
// owned here and only here: every change goes through setFocus() (app_state.h), which
// clamps it to the shown result, so panels read it as is and results never write back
// into Settings.
#pragma once

#include <cstdint>
#include <optional>

#include "config/settings.h"
#include "view/zoom.h"

namespace attnscope {

// The cell under the pointer, shared by the score, probability and mask views and the
// head grid (crosshair). row = query index i, col = key index j.
struct HoverCell {
  int64_t row = -1, col = -1;
  bool valid() const { return row >= 0 && col >= 0; }
  bool operator==(const HoverCell& o) const { return row == o.row && col == o.col; }
  bool operator!=(const HoverCell& o) const { return !(*this == o); }
};

// Sizes a focus must fit: [layers, B, H] of the shown result; unknown before the first one.
struct FocusLimits {
  bool known = false;
  int64_t layers = 1, batch = 1, heads = 1;
};

struct ViewState {
  ViewFocus focus;        // (layer, head, batch item); within the shown result's limits
  HoverCell hover;        // drawn this frame (from the previous frame's pointer)
  HoverCell hover_next;   // collected while drawing this frame
  int grid_columns = 1;   // head grid layout, for Up/Down
  // Focus view zoom: the visible window of every focus map (whole() = not zoomed). View
  // state, never saved with the settings; changed only through setZoom (app_state.h).
  CellWindow zoom;
  std::optional<CellWindow> pan_from;  // the window when the current drag began
};

// The one clamp: each index into [0, limit - 1]; unchanged while the limits are unknown.
ViewFocus clampFocus(ViewFocus focus, const FocusLimits& limits);

}  // namespace attnscope
