// Rollout and flow in the app: when the chosen map kind (state.exports.selected) is one of
// them and the shown view has not got its maps, they are built on a std::async thread with
// progress and cancel (analysis/layer_maps), never on the UI thread and never per frame.
#pragma once

#include "gui/shell/app_state.h"

namespace attnscope {

// Starts, finishes or abandons the build for the shown view and the chosen kind.
void updateLayerMaps(AppState& state);
// Why the chosen across-layer kind cannot be shown for the shown view ("" when it can).
std::string layerMapsUnavailable(const AppState& state, MapKind kind);
// Stops a build (the Cancel button); the view keeps what it had.
void cancelLayerMaps(AppState& state);
// Forgets a failed or cancelled build so that it runs again.
void retryLayerMaps(AppState& state);
// Waits for a running build (cancelled) at shutdown.
void finishLayerMaps(AppState& state);

}  // namespace attnscope
