// --frame-stats: frame times of the app while a scripted drag moves the temperature
// slider every frame (each move posts a recompute, as a user's drag does), printed at
// exit as mean, 95th percentile and maximum, plus the time to the first frame.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gui/shell/app_state.h"

namespace attnscope {

struct FrameStats {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // app start (runGui)
  std::chrono::steady_clock::time_point last_frame{};
  double first_frame_ms = -1.0;  // start -> first frame on screen
  std::vector<double> frame_ms;  // between consecutive frames, while the slider moves
};

// Moves the temperature slider one step (a sweep 0.5 .. 2 and back), as a drag would.
void scriptedSliderStep(AppState& state, int frame);
// After a frame was swapped; `moving` = the scripted drag has started.
void recordFrame(FrameStats& stats, bool moving);
// "frame-stats: 120 frames, mean 9.8 ms, p95 14.1 ms, max 22.0 ms, first frame 610 ms"
std::string frameStatsLine(const FrameStats& stats);

}  // namespace attnscope
