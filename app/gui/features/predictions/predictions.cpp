#include "gui/features/predictions/predictions.h"

#include "gui/shell/app_state.h"

namespace attnscope {
namespace {

// A new run shown: the predictions computed for the last one go; a finished job's come in.
void takeLaterPredictions(AppState& state) {
  PredictionsState& p = state.feature<PredictionsState>();
  const ViewModel* v = state.compute.view.get();
  const std::shared_ptr<const LaterPredictions> source = v ? v->more_predictions : nullptr;
  if (source != p.source) {
    p.source = source;
    p.later.clear();
    p.requested = -1;
    p.later_error.clear();
  }
  const std::shared_ptr<const LaterPredictionsWorker::Done> done = p.worker ? p.worker->poll() : nullptr;
  if (!done || done->source != p.source) return;
  p.requested = -1;
  p.later_error = done->error;
  p.later_rows = static_cast<int64_t>(done->block.rows.size());
  p.later_ms = done->milliseconds;
  for (size_t r = 0; r < done->block.rows.size(); ++r)
    p.later[done->block.first + static_cast<int64_t>(r)] = done->block.rows[r];
  markStateChanged(state);
}

// The position the panel shows has no predictions yet: its block is asked for, once.
void askForShownPredictions(AppState& state) {
  PredictionsState& p = state.feature<PredictionsState>();
  const PredictionPosition at = predictionPosition(state);
  if (at.position < 0 || !p.source || !p.later_error.empty() || knownPredictions(state, at.position)) return;
  const int64_t first = logitBlock(at.position, state.compute.view->L).first;
  if (first == p.requested) return;
  if (!p.worker)  // one 64-row block's predictions from the run's final residual rows
    p.worker = std::make_unique<LaterPredictionsWorker>(
        [](const LaterPredictions& later, int64_t position) { return later.block(position); },
        "out of memory while computing the predictions");
  p.worker->post(p.source, at.position);
  p.requested = first;
  markStateChanged(state);
}

}  // namespace

void askLogitRows(const AppState& state, ComputeAsk& ask) {
  ask.logit_rows = LogitRows{false, {-1}};  // the last position
  for (int64_t row : {state.view.selected_query, state.view.hover.row})
    if (row >= 0) ask.logit_rows.positions.push_back(row);
}

const NextTokenPredictions* knownPredictions(const AppState& state, int64_t position) {
  const ViewModel* v = state.compute.view.get();
  if (!v || position < 0 || position >= static_cast<int64_t>(v->predictions.size())) return nullptr;
  if (!v->predictions[position].top.empty()) return &v->predictions[position];
  const PredictionsState& p = state.feature<PredictionsState>();
  const auto it = p.later.find(position);
  return p.source == v->more_predictions && it != p.later.end() ? &it->second : nullptr;
}

bool laterPredictionsPending(const AppState& state) { return state.feature<PredictionsState>().requested >= 0; }

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

void updatePredictions(AppState& state) {
  if (state.settings.model_text != state.view.pinned_text) unpinQueryRow(state);
  takeLaterPredictions(state);
  askForShownPredictions(state);
}

bool chosenByGeneration(const ViewModel& view, int64_t position) {
  return view.first_generated >= 0 && position + 1 >= view.first_generated &&
         position + 1 < static_cast<int64_t>(view.predictions.size());
}

bool showsPredictions(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->predictions.empty()) return false;
  // A model's run, or a reopened generation bundle (its steps.json's predictions).
  return state.settings.source == InputSource::Model ||
         (state.settings.source == InputSource::Bundle && v->source == ViewSource::Imported);
}

double probabilityBefore(const ViewModel& v, int64_t position, const TokenGuess& guess) {
  const bool known = !v.baseline_next.empty() && position == v.mapL() - 1 && guess.id >= 0 &&
                     guess.id < static_cast<int64_t>(v.baseline_next.size());
  return known ? v.baseline_next[guess.id] : -1.0;
}

void predictionsToJson(const AppState& state, nlohmann::json& line) {
  const ViewModel* v = state.compute.view.get();
  line["predictions"] = nullptr;  // the predictions panel: position, the 5 guesses, the actual next
  if (const PredictionPosition at = predictionPosition(state); at.position >= 0 && showsPredictions(state)) {
    const NextTokenPredictions* known = knownPredictions(state, at.position);
    const NextTokenPredictions p = known ? *known : NextTokenPredictions();
    nlohmann::json top = nlohmann::json::array();
    for (const TokenGuess& guess : p.top) {  // before: without the run's interventions (null: none)
      const double before = probabilityBefore(*v, at.position, guess);
      top.push_back({{"label", guess.label}, {"prob", guess.prob}, {"before", before < 0 ? nlohmann::json() : nlohmann::json(before)}});
    }
    line["predictions"] = {{"position", at.position}, {"why", at.why}, {"top", top}, {"actual", p.actual},
                           {"actual_prob", p.actual_prob}, {"actual_is_top", p.actual_is_top},
                           {"actual_rank", p.actual_rank}, {"chosen", chosenByGeneration(*v, at.position)},
                           {"pending", known == nullptr && v->more_predictions != nullptr}, {"masked_lm", v->encoder}};
  }
  // Logits only where they are looked at: what the shown run and the on-demand jobs unembedded.
  line["logits_rows"] = v ? v->logits_rows : 0;
  line["logits_rows_on_demand"] = state.feature<PredictionsState>().later_rows;
  line["logits_on_demand_ms"] = state.feature<PredictionsState>().later_ms;
  int64_t known_count = 0;
  for (int64_t t = 0; v && t < static_cast<int64_t>(v->predictions.size()); ++t)
    known_count += knownPredictions(state, t) != nullptr;
  line["predictions_known"] = known_count;
  line["predictions_pin"] = nullptr;
  if (state.view.selected_query >= 0) line["predictions_pin"] = state.view.selected_query;
  if (v && v->source == ViewSource::ModelRun) {
    line["query_tokens"] = v->mapQueryTokens();
    line["model_name"] = v->model;
    line["caption"] = v->notes;
    line["unknown_tokens"] = v->unknown_tokens;
    line["interventions"] = v->interventions;  // the run's (settings model_ablate / model_knockout), "" when none
    // The model's cache: the last run computed rows [first_computed, L) only.
    line["first_computed_position"] = v->first_computed;
    line["rows_computed"] = v->mapL() - v->first_computed;
  }
}

}  // namespace attnscope
