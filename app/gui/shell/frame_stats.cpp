#include "gui/shell/frame_stats.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace attnscope {

void scriptedSliderStep(AppState& state, int frame) {
  Settings& s = state.settings;
  s.scale = ScaleChoice::Temperature;
  const int step = frame % 60;  // 30 steps up, 30 down
  s.temperature = 0.5f + 1.5f * static_cast<float>(step < 30 ? step : 60 - step) / 30.0f;
}

void recordFrame(FrameStats& stats, bool moving) {
  const auto now = std::chrono::steady_clock::now();
  if (stats.first_frame_ms < 0.0) {
    stats.first_frame_ms = std::chrono::duration<double, std::milli>(now - stats.started).count();
  } else if (moving) {
    stats.frame_ms.push_back(std::chrono::duration<double, std::milli>(now - stats.last_frame).count());
  }
  stats.last_frame = now;
}

std::string frameStatsLine(const FrameStats& stats) {
  std::vector<double> ms = stats.frame_ms;
  char line[200];
  if (ms.empty()) {
    std::snprintf(line, sizeof line, "frame-stats: 0 frames, first frame %.0f ms", stats.first_frame_ms);
    return line;
  }
  std::sort(ms.begin(), ms.end());
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const double p95 = ms[std::min(ms.size() - 1, static_cast<size_t>(0.95 * static_cast<double>(ms.size())))];
  std::snprintf(line, sizeof line, "frame-stats: %zu frames, mean %.1f ms, p95 %.1f ms, max %.1f ms, first frame %.0f ms",
                ms.size(), mean, p95, ms.back(), stats.first_frame_ms);
  return line;
}

}  // namespace attnscope
