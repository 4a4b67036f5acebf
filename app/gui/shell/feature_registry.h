// The feature registry: one row per feature (its update steps, what it asks of the compute
// job, its drawing and its state-log keys), which the shell runs through each frame instead
// of calling each feature by name. A new panel is its folder plus one row in
// feature_registry.cpp (and its place in panelRect).
#pragma once

#include <nlohmann/json.hpp>

#include "gui/shell/app_state.h"

namespace attnscope {

// Every frame's calls into the features, in the registry's order.
// Before drawing: the result the views show changes (a generation, rollout / flow), then the
// views follow it (after the shell's textures have).
void updateShownResult(AppState& state);
void updateFeatures(AppState& state);
// After receiveResult took a result: each feature clamps what it shows to it.
void followResultInFeatures(AppState& state);
// What the next compute job asks for beyond the settings, from every feature that wants something.
ComputeAsk featuresAsk(const AppState& state);
// A feature is waiting on work of its own (frames keep coming).
bool featuresBusy(const AppState& state);
// Panels, then overlays.
void drawFeatures(AppState& state);
// The features' state-log keys.
void featuresToJson(const AppState& state, nlohmann::json& line);
// At shutdown: background work each feature must finish.
void finishFeatures(AppState& state);

}  // namespace attnscope
