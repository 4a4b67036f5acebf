// Query focus (the focus panel's "Query focus" tab): the chosen query rows of the focused
// batch item across every layer and head, as bars over the keys.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "gui/shell/view_state.h"
#include "tensor/tensor.h"

namespace attnscope {

struct AppState;

// Query focus's result: the chosen rows (ViewState::query_choice) across every layer and
// head, recomputed when the choice, the batch item or the result change (updateQueryFocus).
struct QueryFocusState {
  uint64_t generation = 0;   // result read (0 = none yet)
  int64_t batch_item = -1;
  QueryFocusView choice;     // what `bars` shows
  Tensor bars;               // [layers, H, S]; empty when no query is chosen
};

// Drops chosen rows past the shown result and recomputes the bars when the choice, the
// batch item or the result change.
void updateQueryFocus(AppState& state);
// Queues the bars as one JSON (README: "Compare and query focus exports").
void requestQueryFocusExport(AppState& state);
void drawQueryFocusPanel(AppState& state);
// State-log keys: query_focus.
void queryFocusToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
