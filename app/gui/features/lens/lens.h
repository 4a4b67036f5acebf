// The logit lens table (README, "The logit lens"): for a trained model's run, what each layer
// would predict at each position, as a layers x positions table of the top-1 token coloured by
// its probability. It is a tab of the predictions panel; the numbers come from the view model
// (core/config/model_source: ViewModel::lens), nothing is computed here.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

struct LensCell {
  int64_t layer = -1, position = -1;  // lens layer (0 = the embeddings, k = after k layers)
  bool valid() const { return layer >= 0 && position >= 0; }
  bool operator==(const LensCell& o) const { return layer == o.layer && position == o.position; }
  bool operator!=(const LensCell& o) const { return !(*this == o); }
};

struct LensState {
  bool shown = false;  // the "Logit lens" tab is the open one
  LensCell hovered;    // the cell under the pointer, drawn this frame
  LensCell clicked;    // the cell clicked last (outlined); dropped when the result no longer has it
};

// Before each frame: a clicked cell outside the shown lens (a shorter text) is dropped.
void updateLens(AppState& state);
// The map layer a lens row focuses: row k (after k layers) -> attention layer k - 1, the
// embeddings row -> the first layer.
int64_t lensMapLayer(int64_t lens_layer);
// Clicking a cell: focuses its map layer (setFocus) and pins its position as the query row.
void focusLensCell(AppState& state, LensCell cell);
// Inside the predictions panel's "Logit lens" tab.
void drawLensTable(AppState& state);
// State-log key "lens": null unless a model run is shown; else layers, positions, shown,
// off_reason, top1 ([layers][positions] labels), hovered ({layer, position, top: [{label,
// prob}]} or null), clicked ({layer, position} or null).
void lensToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
