// A trained model's next-token predictions at one query position (top right).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gui/jobs/block_worker.h"
#include "model/model.h"
#include "view/view_model.h"

namespace attnscope {

struct AppState;
struct ColumnSpace;
struct ComputeAsk;

// Logits only where they are looked at: a model run unembeds the positions the panel shows
// (askLogitRows); a position looked at later (hovered, pinned) gets its 64-row block's
// predictions from the view's more_predictions on this worker, without rerunning the model.
using LaterPredictionsWorker = BlockWorker<LaterPredictions, PredictionBlock>;

// The pin is the shell's (ViewState::selected_query, pinQueryRow): a clicked query row holds
// the predictions until the text changes or the user clears it.
struct PredictionsState {
  // Predictions computed on demand for the shown run (source): by position.
  std::unique_ptr<LaterPredictionsWorker> worker;  // started on first use
  std::shared_ptr<const LaterPredictions> source;
  std::map<int64_t, NextTokenPredictions> later;
  int64_t requested = -1;   // the block posted and not back yet (its first position); -1 = none
  int64_t later_rows = 0;   // positions the last on-demand job unembedded
  double later_ms = 0.0;    // and its wall time
  std::string later_error;  // why the last on-demand job failed ("" = it did not)
};
// The positions a model run posted now should unembed: the last one (and the newest
// generated step's), the pinned and the hovered row.
void askLogitRows(const AppState& state, ComputeAsk& ask);
// The predictions known at `position` (the run's or computed later); null while computing.
const NextTokenPredictions* knownPredictions(const AppState& state, int64_t position);
bool laterPredictionsPending(const AppState& state);
// Before each frame: an edited text drops the pin; the shown position's predictions are
// asked for when the run did not compute them, and taken when they are back.
void updatePredictions(AppState& state);

// Model runs: the query position the predictions panel shows (the hovered row, else the
// clicked one, else the newest generated step, else the last) and why; -1 when the shown result has no predictions.
struct PredictionPosition {
  int64_t position = -1;
  const char* why = "";  // "hovered", "clicked", "newest step", "last position"
};
PredictionPosition predictionPosition(const AppState& state);
// The token after `position` was generated (chosen by the Generate control's sampler):
// the panel marks it as the chosen token, with its rank.
bool chosenByGeneration(const ViewModel& view, int64_t position);
// A guess's probability without the run's interventions (ViewModel::baseline_next, the last
// position's), or -1 when there is none to show.
double probabilityBefore(const ViewModel& view, int64_t position, const TokenGuess& guess);
// The latest result is a trained model's run (predictions panel shown).
bool showsPredictions(const AppState& state);
// Its height at the top of the right column (the dragged panel_sizes.predictions, else 30%).
float predictionsHeight(const AppState& state, const ColumnSpace& space);
void drawPredictionsPanel(AppState& state);  // trained models only
// State-log keys: predictions, query_tokens, model_name, caption, unknown_tokens,
// predictions_pin (the pinned query row, null when none); predictions.chosen (a generated
// token) and predictions.actual_rank (its rank, 1 = the top guess); predictions.pending
// (being computed on demand: top empty); logits_rows (positions the shown run unembedded),
// logits_rows_on_demand (positions the last on-demand job unembedded) and
// logits_on_demand_ms (its wall time), predictions_known
// (positions whose predictions are known).
void predictionsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
