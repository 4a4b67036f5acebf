// The KV-cache stepper (F5): the sequence decoded one token at a time through a KV cache.
#pragma once

#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "view/view_model.h"

namespace attnscope {

struct AppState;
struct ColumnSpace;
struct KeyPress;
struct ComputeAsk;

// The KV-cache stepper (F5). The step is clamped by setStep only.
struct StepperState {
  bool open = false;
  int64_t step = 0;      // the token fed last: row `step` of the map is the new row
  bool playing = false;  // advances one step every kStepperPlayInterval, stops at the end
  std::chrono::steady_clock::time_point next_step_at;
};
inline constexpr auto kStepperPlayInterval = std::chrono::milliseconds(450);

// A model run is shown (the stepper steps through its runner's cache, no decoding).
const ViewModel* modelRunShown(const AppState& state);
// The steps to go through: the model run's L or the decoding's (0 without either).
int64_t stepperSteps(const AppState& state);
// The one way to move the stepper: clamped to [0, L - 1] of the decoding or the model run
// (0 without either).
void setStep(AppState& state, int64_t step);
// A new result: the step clamped to a shorter sequence.
void clampStep(AppState& state);
// The open stepper asks every job for the decoding too.
void askDecode(const AppState& state, ComputeAsk& ask);
bool stepperPlaying(const AppState& state);
// Its keys (a hook of the registry): F5 opens or closes it; while open, . / , step, P plays
// or pauses, Home / End go to the first / last step. True when it took the press.
bool stepperKey(AppState& state, const KeyPress& press);
// Its panel is shown (a place of the registry): while open, 60% of what the mask leaves.
bool stepperOpen(const AppState& state);
float stepperHeight(const AppState& state, const ColumnSpace& space);
// Opens or closes the stepper panel (F5); closing stops play.
void toggleStepper(AppState& state);
// Play: advances the stepper when its interval has passed (before drawing each frame).
void advanceStepperPlay(AppState& state);
void drawStepperPanel(AppState& state);  // only while state.feature<StepperState>().open
// State-log keys: stepper (a model run: stepper.model_cache {L, layers [{entries, evicted, kv_heads, head_dim,
// bytes}], entries, evicted, bytes}: the cache while the step computes its row).
void stepperToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
