// The compare view's and query focus's bookkeeping, before each frame: default picks, the
// one clamp of the picks (and chosen query rows) to the shown result, and A - B (with its
// texture) or the query focus bars recomputed only when the choice, the batch item or the
// result change.
#pragma once

#include <string>

#include "gui/app_state.h"

namespace attnscope {

// The view model a pick reads: this run (the shown view) or the mistakes lab's correct run;
// null when that run is missing or its maps have other sizes than this run's.
const ViewModel* pickedView(const AppState& state, const MapPick& pick);
// "layer 1, head 2 (correct run)" (the layer only with several).
std::string pickName(const ViewModel& view, const MapPick& pick);
// The texture of a pick's probability map for the focused batch item (0 when missing).
unsigned int pickedTexture(const AppState& state, const MapPick& pick);

void updateComparison(AppState& state);
void updateQueryFocus(AppState& state);

}  // namespace attnscope
