// Keeps the focused head in view in the head metrics table and the layer x head grid: when
// the focus moves (a tile or a table row clicked, the arrow keys), each list scrolls the
// focused head to its middle unless it is already fully visible. The user's own scrolling
// is left alone until the focus moves again.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/settings.h"

namespace attnscope {

struct AppState;

// One scrolling list of heads (the table's rows, the grid's tiles).
struct HeadScrollList {
  ViewFocus scrolled_for{-1, -1, -1};  // the focus this list last brought into view
  int64_t scrolled_to = -1;            // head n = layer * H + head it last scrolled to; -1 none
  std::vector<int64_t> visible;        // heads fully visible in the last frame drawn
  std::vector<int64_t> drawing;        // this frame's, so far
};

struct HeadScrollState {
  HeadScrollList table, grid;
};

// Around the heads a list draws this frame; endHeadRows logs a changed visible set.
void beginHeadRows(HeadScrollList& list);
void endHeadRows(AppState& state, HeadScrollList& list);
// After the item of head (layer, head) of H heads per layer (its table row, its tile):
// records whether it is fully visible (below `top_inset` px of frozen rows) and scrolls the
// window to it when it is the newly focused head and is not.
void headRowDrawn(AppState& state, HeadScrollList& list, int64_t layer, int64_t head, int64_t H,
                  float top_inset = 0.0f);
// State-log keys: table_scroll, grid_scroll ({scrolled_to: n or null, visible: [n, ...]}).
void headScrollToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
