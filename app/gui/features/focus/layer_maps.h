// Rollout and flow in the app: when the chosen map kind (state.view.map_kind) is one of
// them and the shown view has not got its maps, they are built on a LatestJobWorker with
// progress and cancel (analysis/layer_maps), never on the UI thread and never per frame.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gui/jobs/latest_job_worker.h"
#include "view/map_kinds.h"
#include "view/view_model.h"

namespace attnscope {

struct AppState;

// Rollout or flow of the shown view (analysis/layer_maps), built when chosen, off the UI
// thread, into a copy of the view model that then replaces the shown one (updateLayerMaps).
struct LayerMapsRequest {
  std::shared_ptr<const ViewModel> view;  // the view to extend
  MapKind kind = MapKind::Rollout;
};
struct LayerMapsBuilt {
  std::shared_ptr<const ViewModel> view;  // the extended copy; null when it failed or was cancelled
  std::string error;                      // why not
};
using LayerMapsWorker = LatestJobWorker<LayerMapsRequest, LayerMapsBuilt>;

struct LayerMapsState {
  std::unique_ptr<LayerMapsWorker> worker;  // started on first use
  MapKind kind = MapKind::Rollout;    // what it builds or failed to build
  uint64_t source = 0;                // the view it extends (its stamp)
  std::string error;  // why building kind for source failed or stopped ("" = none); not retried
  bool building() const { return worker && worker->busy(); }  // a build runs or waits to be taken
  double progress() const { return worker ? worker->progress() : 0.0; }  // of the build, [0, 1]
};


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

// The Maps tab: which map kind is shown (a registry row each), and the rollout / flow view.
void drawMapKindChooser(AppState& state);
void drawLayerMapsView(AppState& state);
// State-log keys: layer_maps.
void layerMapsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
