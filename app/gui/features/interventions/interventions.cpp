#include "gui/features/interventions/interventions.h"

#include "gui/shell/app_state.h"

namespace attnscope {

Interventions appInterventions(const AppState& state) {
  if (state.settings.source != InputSource::Model) return {};
  return parseInterventions(state.settings.model_ablate, state.settings.model_knockout);  // checked when read
}

std::vector<std::string> interventionLines(const Interventions& in) {
  std::vector<std::string> lines;
  for (const HeadAblation& a : in.ablations) {
    Interventions one;
    one.ablations = {a};
    lines.push_back("ablate " + one.ablateSpec());
  }
  for (const Knockout& k : in.knockouts) {
    Interventions one;
    one.knockouts = {k};
    lines.push_back("knockout " + one.knockoutSpec());
  }
  return lines;
}

std::optional<AblationMode> focusedAblation(const AppState& state) {
  const Interventions in = appInterventions(state);
  for (const HeadAblation& a : in.ablations)
    if (a.layer == state.view.focus.layer && a.head == state.view.focus.head) return a.mode;
  return std::nullopt;
}

void ablateFocusedHead(AppState& state, std::optional<AblationMode> mode) {
  setHeadAblation(state, state.view.focus.layer, state.view.focus.head, mode);
}

void knockOutCell(AppState& state, int64_t query, int64_t key, bool whole_layer) {
  Interventions in = appInterventions(state);
  in.knockouts.push_back({state.view.focus.layer, whole_layer ? -1 : state.view.focus.head, query, key, ""});
  setModelInterventions(state, in);
}

void undoIntervention(AppState& state, size_t index) {
  Interventions in = appInterventions(state);
  if (index < in.ablations.size()) in.ablations.erase(in.ablations.begin() + static_cast<std::ptrdiff_t>(index));
  else if (index - in.ablations.size() < in.knockouts.size())
    in.knockouts.erase(in.knockouts.begin() + static_cast<std::ptrdiff_t>(index - in.ablations.size()));
  setModelInterventions(state, in);
}

void clearInterventions(AppState& state) { setModelInterventions(state, {}); }

void interventionsToJson(const AppState& state, nlohmann::json& line) {
  line["interventions_list"] = interventionLines(appInterventions(state));
  line["model_ablate"] = state.settings.model_ablate;
  line["model_knockout"] = state.settings.model_knockout;
}

}  // namespace attnscope
