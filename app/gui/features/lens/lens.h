// The logit lens table (README, "The logit lens"): for a trained model's run, what each layer
// would predict at each position, as a layers x positions table of the top-1 token coloured by
// its probability. It is a tab of the predictions panel; the numbers come from the view model
// (core/config/model_source: ViewModel::lens): made with the run, or past its budget column by
// column on this feature's worker (LensTable::later) for the columns the table shows.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gui/jobs/block_worker.h"
#include "view/view_model.h"

namespace attnscope {

struct AppState;
struct ComputeAsk;

struct LensCell {
  int64_t layer = -1, position = -1;  // lens layer (0 = the embeddings, k = after k layers)
  bool valid() const { return layer >= 0 && position >= 0; }
  bool operator==(const LensCell& o) const { return layer == o.layer && position == o.position; }
  bool operator!=(const LensCell& o) const { return !(*this == o); }
};

using LaterLensWorker = BlockWorker<LaterLens, LensColumns>;

struct LensState {
  bool shown = false;  // the "Logit lens" tab is the open one
  bool enlarged = false;  // the table is drawn over the focus view (room for every layer and more positions)
  LensCell hovered;    // the cell under the pointer, drawn this frame
  LensCell clicked;    // the cell clicked last (outlined); dropped when the result no longer has it
  // Columns computed on demand for the shown run's lens (source), by position: [layers] cells.
  std::unique_ptr<LaterLensWorker> worker;  // started on first use
  std::shared_ptr<const LaterLens> source;
  std::map<int64_t, std::vector<std::vector<TokenGuess>>> columns;
  int64_t requested = -1;                      // the block posted and not back yet (its first position)
  int64_t visible_first = 0, visible_end = 0;  // the columns the table drew last frame
  double columns_ms = 0.0;                     // the last block's wall time
  std::string error;                           // why the last block failed ("" = it did not)
};

// Before each frame: a clicked cell outside the shown lens (a shorter text) is dropped; a
// lens made column by column takes a finished block and asks for the next column the table
// shows (or the clicked one) that is not known yet.
void updateLens(AppState& state);
// The open tab asks a model run for the lens past its budget (the run keeps its residuals).
void askLens(const AppState& state, ComputeAsk& ask);
// The top guesses at one cell of the shown lens; null while its column is being computed.
const std::vector<TokenGuess>* lensCell(const AppState& state, int64_t layer, int64_t position);
// The map layer a lens row focuses: row k (after k layers) -> attention layer k - 1, the
// embeddings row -> the first layer.
int64_t lensMapLayer(int64_t lens_layer);
// Clicking a cell: focuses its map layer (setFocus) and pins its position as the query row.
void focusLensCell(AppState& state, LensCell cell);
// The "Logit lens" tab of the predictions panel (a part of the predictions panel in the registry).
void drawLensTab(AppState& state);
// State-log key "lens": null unless a model run is shown; else layers, positions, shown, enlarged,
// off_reason, top1 ([layers][positions] labels, null for a column not computed yet), hovered
// ({layer, position, top: [{label, prob}]} or null), clicked ({layer, position} or null),
// on_demand (made column by column), columns_known, columns_ms (the last block's wall time).
void lensToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
