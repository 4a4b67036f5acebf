// A trained model's next-token predictions at one query position (top right).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "view/view_model.h"

namespace attnscope {

struct AppState;

// The pin: a query row clicked in a map (ViewState::selected_query) holds the predictions
// until the text changes (typing follows the end of the text again) or the user clears it.
struct PredictionsState {
  std::string pinned_text;  // the model text when the row was pinned
};
// Pins the predictions to query row `row` of the current text.
void pinPrediction(AppState& state, int64_t row);
void clearPredictionPin(AppState& state);
// Before each frame: an edited text drops the pin.
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
// The latest result is a trained model's run (predictions panel shown).
bool showsPredictions(const AppState& state);
void drawPredictionsPanel(AppState& state);  // trained models only
// State-log keys: predictions, query_tokens, model_name, caption, unknown_tokens,
// predictions_pin (the pinned query row, null when none); predictions.chosen (a generated
// token) and predictions.actual_rank (its rank, 1 = the top guess).
void predictionsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
