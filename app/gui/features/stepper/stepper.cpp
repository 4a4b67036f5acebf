#include "gui/features/stepper/stepper.h"

#include <algorithm>

#include "analysis/cache_footprint.h"
#include "gui/shell/app_state.h"

namespace attnscope {

const ViewModel* modelRunShown(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  return v && v->source == ViewSource::ModelRun && !v->tiled ? v : nullptr;  // tiled: no traces
}

int64_t stepperSteps(const AppState& state) {
  const ViewModel* model_run = modelRunShown(state);
  return model_run ? model_run->L : state.compute.decode() ? state.compute.decode()->L : 0;
}

void setStep(AppState& state, int64_t step) {
  const int64_t steps = stepperSteps(state);
  step = std::clamp<int64_t>(step, 0, std::max<int64_t>(steps - 1, 0));
  if (state.feature<StepperState>().playing && step >= steps - 1) state.feature<StepperState>().playing = false;  // the end
  if (step == state.feature<StepperState>().step) return;
  state.feature<StepperState>().step = step;
  markStateChanged(state);
}

void clampStep(AppState& state) { setStep(state, state.feature<StepperState>().step); }

void askDecode(const AppState& state, ComputeAsk& ask) { ask.decode = state.feature<StepperState>().open; }

bool stepperPlaying(const AppState& state) { return state.feature<StepperState>().playing; }

void toggleStepper(AppState& state) {
  state.feature<StepperState>().open = !state.feature<StepperState>().open;
  state.feature<StepperState>().playing = false;
  markStateChanged(state);
}

void stepperToJson(const AppState& state, nlohmann::json& line) {
  line["stepper"] = nullptr;
  if (!state.feature<StepperState>().open) return;
  const ComputeState& c = state.compute;
  nlohmann::json stepper = {{"step", state.feature<StepperState>().step}, {"playing", state.feature<StepperState>().playing}, {"error", c.decodeError()}};
  if (const ViewModel* v = modelRunShown(state)) {  // the runner's cache after this step
    const CacheFootprint cache = cacheFootprint(*v, state.feature<StepperState>().step);
    nlohmann::json layers = nlohmann::json::array();
    for (const CacheLayer& l : cache.layers)
      layers.push_back({{"entries", l.entries}, {"evicted", l.evicted}, {"kv_heads", l.kv_heads},
                        {"head_dim", l.head_dim}, {"bytes", l.bytes}});
    stepper["error"] = "";
    stepper["model_cache"] = {{"L", v->L}, {"layers", layers}, {"entries", cache.entries},
                              {"evicted", cache.evicted}, {"bytes", cache.bytes}};
    line["stepper"] = stepper;
    return;
  }
  if (const KvCacheRun* run = c.decode().get()) {
    const DecodeStep& step = run->steps[std::clamp<int64_t>(state.feature<StepperState>().step, 0, run->L - 1)];
    const int64_t entries = static_cast<int64_t>(step.cached.size());
    stepper.update({{"L", run->L}, {"B", run->B}, {"d", run->d}, {"G", run->G}, {"sinks", run->sinks},
                    {"window", run->window}, {"capacity", run->capacity}, {"entries", entries},
                    {"entries_after", step.entries_after}, {"bytes_per_group", run->bytesPerGroup(entries)},
                    {"bytes_per_layer", run->bytesPerLayer(entries)}, {"cached", step.cached},
                    {"evicted", step.evicted}});
    if (step.position < static_cast<int64_t>(c.decodeRowDiff().size())) stepper["row_diff"] = c.decodeRowDiff()[step.position];
  }
  line["stepper"] = stepper;
}

}  // namespace attnscope
