#include "gui/features/stepper/stepper.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/cache_footprint.h"
#include "gui/shell/app_state.h"
#include "gui/shell/panels.h"

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

namespace {

// The stepper's keys while it is open: . / , step forward / back, P plays or pauses,
// Home / End go to the first / last step. True when the key was one of them.
bool stepKey(AppState& state, int key) {
  StepperState& s = state.feature<StepperState>();
  switch (key) {
    case GLFW_KEY_PERIOD: s.playing = false; setStep(state, s.step + 1); return true;
    case GLFW_KEY_COMMA: s.playing = false; setStep(state, s.step - 1); return true;
    case GLFW_KEY_HOME: s.playing = false; setStep(state, 0); return true;
    case GLFW_KEY_END: s.playing = false; setStep(state, std::numeric_limits<int64_t>::max()); return true;
    case GLFW_KEY_P:
      s.playing = !s.playing && stepperSteps(state) > 0;
      if (s.playing && s.step + 1 >= stepperSteps(state)) setStep(state, 0);  // replay from the start
      s.next_step_at = std::chrono::steady_clock::now() + kStepperPlayInterval;
      markStateChanged(state);
      return true;
    default: return false;
  }
}

}  // namespace

bool stepperKey(AppState& state, const KeyPress& press) {
  if (press.key == GLFW_KEY_F5) {
    toggleStepper(state);
    return true;
  }
  const bool ctrl = (press.mods & GLFW_MOD_CONTROL) != 0;
  if (!state.feature<StepperState>().open || ctrl || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) return false;
  return stepKey(state, press.key);
}

bool stepperOpen(const AppState& state) { return state.feature<StepperState>().open; }

float stepperHeight(const AppState&, const ColumnSpace& space) { return std::floor((space.height - space.above) * 0.6f); }

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
