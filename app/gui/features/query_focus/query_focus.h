// Query focus (the focus panel's "Query focus" tab): the chosen query rows of the focused
// batch item across every layer and head, as bars over the keys.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "tensor/tensor.h"

namespace attnscope {

struct AppState;

// Chosen query rows of the focused batch item, shown across every layer and head as bars
// over the keys, summed or averaged.
struct QueryFocusView {
  std::vector<int64_t> queries;         // sorted, unique; empty = none chosen
  RowCombine combine = RowCombine::Mean;
};

// Query focus's choice and result: the chosen rows across every layer and head, recomputed
// when the choice, the batch item or the result change (updateQueryFocus).
struct QueryFocusState {
  QueryFocusView wanted;     // what the user chose (query labels, the tab's buttons)
  uint64_t generation = 0;   // result read (0 = none yet)
  int64_t batch_item = -1;
  QueryFocusView choice;     // what `bars` shows
  Tensor bars;               // [layers, H, S]; empty when no query is chosen
};

// Click a query token: choose only it; Ctrl+click: add it to (or take it out of) the choice.
void chooseQuery(AppState& state, int64_t query, bool add);
// Drops chosen rows past the shown result and recomputes the bars when the choice, the
// batch item or the result change.
void updateQueryFocus(AppState& state);
// Queues the bars as one JSON (README: "Compare and query focus exports").
void requestQueryFocusExport(AppState& state);
void drawQueryFocusPanel(AppState& state);
// State-log keys: query_focus.
void queryFocusToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
