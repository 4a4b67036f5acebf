// A trained model's next-token predictions at one query position (top right).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

// Model runs: the query position the predictions panel shows (the hovered row, else the
// clicked one, else the last) and why; -1 when the shown result has no predictions.
struct PredictionPosition {
  int64_t position = -1;
  const char* why = "";  // "hovered", "clicked", "last position"
};
PredictionPosition predictionPosition(const AppState& state);
// The latest result is a trained model's run (predictions panel shown).
bool showsPredictions(const AppState& state);
void drawPredictionsPanel(AppState& state);  // trained models only
// State-log keys: predictions, query_tokens, model_name, caption, unknown_tokens.
void predictionsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
