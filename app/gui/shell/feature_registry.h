// The feature registry: one row per feature (its update steps, what it asks of the compute
// job, its keys, its drawing, its state-log keys and, for a panel, its default place), which
// the shell runs through each frame instead of calling each feature by name. A new panel is
// its folder plus one row in feature_registry.cpp.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "gui/shell/app_state.h"
#include "gui/shell/panels.h"

namespace attnscope {

// Every frame's calls into the features, in the registry's order.
// Before drawing: the result the views show changes (a generation, rollout / flow), then the
// views follow it (after the shell's textures have).
void updateShownResult(AppState& state);
void updateFeatures(AppState& state);
// A feature is waiting on work of its own (frames keep coming).
bool featuresBusy(const AppState& state);
// Offers a key press to the features' key hooks in order; true when one took it.
bool featuresKey(AppState& state, const KeyPress& press);
// Panels, then overlays.
void drawFeatures(AppState& state);
// The features' state-log keys.
void featuresToJson(const AppState& state, nlohmann::json& line);
// At shutdown: background work each feature must finish.
void finishFeatures(AppState& state);

// A panel: a registry row with a place (shell/layout.cpp lays them out).
struct PanelRow {
  const char* name;
  PanelPlace place;
};
// Every panel, in the registry's order.
const std::vector<PanelRow>& registeredPanels();

}  // namespace attnscope
