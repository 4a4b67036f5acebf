// Interventions in the app (the focus panel's "Interventions" tab, a row of the registry): the
// focused head's ablate toggle (off / zero / mean), the knockout of one query-key cell for the
// focused head or every head of its layer, and the list of what is active with undo per item
// and "clear all". They are settings (model_ablate, model_knockout: saved with the settings,
// named in exports, reopened), so the maps, the predictions (before -> after), the lens and
// Generate all follow them; a change reruns the model from the first layer it touches
// (ModelRunner::setInterventions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/interventions.h"

namespace attnscope {

struct AppState;

// The tab's own inputs: the cell a knockout button knocks out (query -1: the last position).
struct InterventionsState {
  int query = -1, key = 0;
};

// The settings' interventions (none for a source other than a model).
Interventions appInterventions(const AppState& state);
// One line per active intervention, in list order: ablations, then knockouts ("ablate L1H2 (mean)").
std::vector<std::string> interventionLines(const Interventions& interventions);
// The focused head's ablation: nullopt = none (an ablation of its whole layer still applies).
std::optional<AblationMode> focusedAblation(const AppState& state);
// Sets the focused head's ablation (nullopt: removes the items naming exactly that head).
void ablateFocusedHead(AppState& state, std::optional<AblationMode> mode);
// Knocks out (query, key) for the focused head, or every head of its layer.
void knockOutCell(AppState& state, int64_t query, int64_t key, bool whole_layer);
// Removes item `index` of interventionLines; clearInterventions removes all.
void undoIntervention(AppState& state, size_t index);
void clearInterventions(AppState& state);
void drawInterventionsPanel(AppState& state);
// State-log keys: interventions {ablate, knockout, items}.
void interventionsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
