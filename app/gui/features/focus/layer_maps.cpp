#include "gui/features/focus/layer_maps.h"

#include "gui/shell/app_state.h"

#include <new>
#include <utility>

#include "analysis/layer_maps.h"

namespace attnscope {
namespace {

// On the build thread: a copy of the view with kind's maps (its maps are shared, not
// copied), or why there is none.
LayerMapsBuilt buildLayerMaps(LayerMapsRequest& request, const LayerMapsWorker::Job& job) {
  LayerMapsBuilt built;
  try {
    ViewModel extended = *request.view;
    addAcrossLayerMaps(extended, request.kind, [&](double fraction) {
      job.progress(fraction);
      return job.keepGoing();
    });
    built.view = std::make_shared<const ViewModel>(std::move(extended));
  } catch (const Cancelled&) {
    built.error = std::string(mapKindInfo(request.kind).label) + " cancelled";
  } catch (const std::bad_alloc&) {
    built.error = std::string("out of memory while building ") + mapKindInfo(request.kind).label;
  } catch (const std::exception& e) {
    built.error = e.what();
  }
  return built;
}

// The built view replaces the shown one; its head table, measured on the same maps, follows.
void showExtendedView(AppState& state, std::shared_ptr<const ViewModel> extended) {
  ComputeState& c = state.compute;
  if (c.head_table && c.view && c.head_table->source_stamp == c.view->stamp.value()) {
    auto table = std::make_shared<HeadTable>(*c.head_table);
    table->source = extended.get();
    table->source_stamp = extended->stamp.value();
    c.head_table = std::move(table);
  }
  c.view = std::move(extended);
}

}  // namespace

std::string layerMapsUnavailable(const AppState& state, MapKind kind) {
  if (!mapKindInfo(kind).across_layers) return "";
  const ViewModel* view = state.compute.view.get();
  if (!view) return "nothing computed yet";
  return acrossLayersUnavailable(*view);
}

void updateLayerMaps(AppState& state) {
  LayerMapsState& job = state.feature<LayerMapsState>();
  const ViewModel* view = state.compute.view.get();
  const uint64_t stamp = view ? view->stamp.value() : 0;
  if (job.building()) {
    // A newer result or another kind: the build is of no use any more.
    if (stamp != job.source || state.view.map_kind != job.kind) job.worker->cancel();
    const std::shared_ptr<const LayerMapsBuilt> built = job.worker->poll();
    if (!built) return;
    if (!built->view) job.error = built->error;
    else if (stamp == job.source) showExtendedView(state, built->view);
    markStateChanged(state);
    return;
  }
  const MapKind kind = state.view.map_kind;
  if (!view || !mapKindInfo(kind).across_layers || view->acrossLayers(kind)) return;
  if (!layerMapsUnavailable(state, kind).empty()) return;
  if (!job.error.empty() && job.source == stamp && job.kind == kind) return;  // failed: wait for a retry
  job.kind = kind;
  job.source = stamp;
  job.error.clear();
  if (!job.worker) job.worker = std::make_unique<LayerMapsWorker>(buildLayerMaps, JobOptions{JobPolicy::Latest, 0, 0.0});
  job.worker->post({state.compute.view, kind});
  markStateChanged(state);
}

void cancelLayerMaps(AppState& state) {
  if (state.feature<LayerMapsState>().building()) state.feature<LayerMapsState>().worker->cancel();
}

void retryLayerMaps(AppState& state) {
  state.feature<LayerMapsState>().error.clear();
  markStateChanged(state);
}

void finishLayerMaps(AppState& state) {
  if (!state.feature<LayerMapsState>().worker) return;
  state.feature<LayerMapsState>().worker->cancel();
  state.feature<LayerMapsState>().worker.reset();  // joins the build thread
}

void layerMapsToJson(const AppState& state, nlohmann::json& line) {
  // Built kinds of the shown view, a build in flight, why a kind is greyed out.
  nlohmann::json built = nlohmann::json::array(), unavailable = nlohmann::json::object();
  if (const ViewModel* v = state.compute.view.get())
    for (const auto& maps : v->across_layers) built.push_back(mapKindName(maps->kind));
  for (const MapKindInfo& info : mapKinds())
    if (const std::string why = layerMapsUnavailable(state, info.kind); !why.empty()) unavailable[info.name] = why;
  const LayerMapsState& lm = state.feature<LayerMapsState>();
  line["layer_maps"] = {{"built", built},
                        {"building", lm.building() ? nlohmann::json(mapKindName(lm.kind)) : nlohmann::json(nullptr)},
                        {"error", lm.error},
                        {"unavailable", unavailable}};
}

}  // namespace attnscope
