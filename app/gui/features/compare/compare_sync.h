// The compare view's and query focus's bookkeeping, before each frame: default picks, the
// one clamp of the picks (and chosen query rows) to the shown result, and A - B (with its
// texture) or the query focus bars recomputed only when the choice, the batch item or the
// result change.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gui/shell/app_state.h"

namespace attnscope {

// B can be the same settings under another mistake (a second run) for the core's own runs
// (not trained models, not imported maps).
bool settingsVariantsPossible(const AppState& state);
// The view model a pick reads: this run (the shown view), the mistakes lab's correct run, or
// the settings variant; null when that run is missing, still running or its maps have
// other sizes than this run's.
const ViewModel* pickedView(const AppState& state, const MapPick& pick);
// "layer 1, head 2 (correct run)" (the layer only with several), "head 0 (with no-scaling)".
std::string pickName(const ViewModel& view, const MapPick& pick);
// {"layer", "head", "run": "this" | "correct" | "with:<mistake>"} (state log, view.json, exports).
nlohmann::json pickJson(const MapPick& pick);
// The texture of a pick's probability map for the focused batch item (0 when missing).
unsigned int pickedTexture(const AppState& state, const MapPick& pick);

void updateComparison(AppState& state);
void updateQueryFocus(AppState& state);

}  // namespace attnscope
