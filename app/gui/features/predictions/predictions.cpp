#include "gui/features/predictions/predictions.h"

#include "gui/shell/app_state.h"

namespace attnscope {

PredictionPosition predictionPosition(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->predictions.empty() || !state.compute.error().empty()) return {};
  const int64_t L = static_cast<int64_t>(v->predictions.size());
  // A tiled source's hover is an overview block: its real row is map_hover's.
  const int64_t hovered = v->tiled ? state.view.map_hover.row : state.view.hover.row;
  if (hovered >= 0 && hovered < L) return {hovered, "hovered"};
  if (state.view.selected_query >= 0 && state.view.selected_query < L) return {state.view.selected_query, "clicked"};
  // A generation: the newest step, its top-5 with the token chosen after it.
  if (v->first_generated >= 0 && L - 1 >= v->first_generated) return {L - 2, "newest step"};
  return {L - 1, "last position"};
}

void pinPrediction(AppState& state, int64_t row) {
  state.view.selected_query = row;
  state.predictions.pinned_text = state.settings.model_text;
  markStateChanged(state);
}

void clearPredictionPin(AppState& state) {
  if (state.view.selected_query < 0) return;
  state.view.selected_query = -1;
  markStateChanged(state);
}

void updatePredictions(AppState& state) {
  if (state.settings.model_text != state.predictions.pinned_text) clearPredictionPin(state);
}

bool chosenByGeneration(const ViewModel& view, int64_t position) {
  return view.first_generated >= 0 && position + 1 >= view.first_generated &&
         position + 1 < static_cast<int64_t>(view.predictions.size());
}

bool showsPredictions(const AppState& state) {
  return state.settings.source == InputSource::Model && state.compute.view && !state.compute.view->predictions.empty();
}

void predictionsToJson(const AppState& state, nlohmann::json& line) {
  const ViewModel* v = state.compute.view.get();
  line["predictions"] = nullptr;  // the predictions panel: position, the 5 guesses, the actual next
  if (const PredictionPosition at = predictionPosition(state); at.position >= 0 && showsPredictions(state)) {
    const NextTokenPredictions& p = v->predictions[at.position];
    nlohmann::json top = nlohmann::json::array();
    for (const TokenGuess& guess : p.top) top.push_back({{"label", guess.label}, {"prob", guess.prob}});
    line["predictions"] = {{"position", at.position}, {"why", at.why}, {"top", top}, {"actual", p.actual},
                           {"actual_prob", p.actual_prob}, {"actual_is_top", p.actual_is_top},
                           {"actual_rank", p.actual_rank}, {"chosen", chosenByGeneration(*v, at.position)}};
  }
  line["predictions_pin"] = nullptr;
  if (state.view.selected_query >= 0) line["predictions_pin"] = state.view.selected_query;
  if (v && v->source == ViewSource::ModelRun) {
    line["query_tokens"] = v->mapQueryTokens();
    line["model_name"] = v->model;
    line["caption"] = v->notes;
    line["unknown_tokens"] = v->unknown_tokens;
    // The model's cache: the last run computed rows [first_computed, L) only.
    line["first_computed_position"] = v->first_computed;
    line["rows_computed"] = v->mapL() - v->first_computed;
  }
}

}  // namespace attnscope
