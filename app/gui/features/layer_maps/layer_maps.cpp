#include "gui/features/layer_maps/layer_maps.h"

#include "gui/shell/app_state.h"

#include <new>
#include <utility>

#include "analysis/layer_maps.h"

namespace attnscope {
namespace {

// On the build thread: a copy of view with kind's maps (its maps are shared, not copied).
std::shared_ptr<const ViewModel> buildLayerMaps(std::shared_ptr<const ViewModel> view, MapKind kind,
                                                std::shared_ptr<std::atomic<double>> progress,
                                                std::shared_ptr<std::atomic<bool>> cancel) {
  ViewModel extended = *view;
  addAcrossLayerMaps(extended, kind, [&](double fraction) {
    progress->store(fraction);
    return !cancel->load();
  });
  return std::make_shared<const ViewModel>(std::move(extended));
}

// The built view replaces the shown one; its head table, measured on the same maps, follows.
void showExtendedView(AppState& state, std::shared_ptr<const ViewModel> extended) {
  ComputeState& c = state.compute;
  if (c.head_table && c.head_table->source == c.view.get()) {
    auto table = std::make_shared<HeadTable>(*c.head_table);
    table->source = extended.get();
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
  LayerMapsState& job = state.layer_maps;
  const ViewModel* view = state.compute.view.get();
  if (job.running.valid()) {
    // A newer result or another kind: the build is of no use any more.
    if (view != job.source || state.view.map_kind != job.kind) job.cancel->store(true);
    if (job.running.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    try {
      std::shared_ptr<const ViewModel> extended = job.running.get();
      if (view == job.source) showExtendedView(state, std::move(extended));
    } catch (const Cancelled&) {
      job.error = std::string(mapKindInfo(job.kind).label) + " cancelled";
    } catch (const std::bad_alloc&) {
      job.error = std::string("out of memory while building ") + mapKindInfo(job.kind).label;
    } catch (const std::exception& e) {
      job.error = e.what();
    }
    markStateChanged(state);
    return;
  }
  const MapKind kind = state.view.map_kind;
  if (!view || !mapKindInfo(kind).across_layers || view->acrossLayers(kind)) return;
  if (!layerMapsUnavailable(state, kind).empty()) return;
  if (!job.error.empty() && job.source == view && job.kind == kind) return;  // failed: wait for a retry
  job.kind = kind;
  job.source = view;
  job.error.clear();
  job.progress->store(0.0);
  job.cancel->store(false);
  job.running = std::async(std::launch::async, buildLayerMaps, state.compute.view, kind, job.progress, job.cancel);
  markStateChanged(state);
}

void cancelLayerMaps(AppState& state) {
  if (state.layer_maps.running.valid()) state.layer_maps.cancel->store(true);
}

void retryLayerMaps(AppState& state) {
  state.layer_maps.error.clear();
  markStateChanged(state);
}

void finishLayerMaps(AppState& state) {
  if (!state.layer_maps.running.valid()) return;
  state.layer_maps.cancel->store(true);
  state.layer_maps.running.wait();
}

void layerMapsToJson(const AppState& state, nlohmann::json& line) {
  // Built kinds of the shown view, a build in flight, why a kind is greyed out.
  nlohmann::json built = nlohmann::json::array(), unavailable = nlohmann::json::object();
  if (const ViewModel* v = state.compute.view.get())
    for (const auto& maps : v->across_layers) built.push_back(mapKindName(maps->kind));
  for (const MapKindInfo& info : mapKinds())
    if (const std::string why = layerMapsUnavailable(state, info.kind); !why.empty()) unavailable[info.name] = why;
  const LayerMapsState& lm = state.layer_maps;
  line["layer_maps"] = {{"built", built},
                        {"building", lm.running.valid() ? nlohmann::json(mapKindName(lm.kind)) : nlohmann::json(nullptr)},
                        {"error", lm.error},
                        {"unavailable", unavailable}};
}

}  // namespace attnscope
