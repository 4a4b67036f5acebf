// Over a generation (issue 21), per head: the attention mass each generated step's query
// row gives to the first token (a sink) and to the last W tokens (the W keys up to and
// including its own position). Rows t = first_generated .. L - 1 of every causal map:
//   sink[t]   = p[t, 0]
//   recent[t] = sum_{j = max(0, t - W + 1)}^{t} p[t, j]
// The app plots both series per head; the head table and `attnscope analyze` show their
// means over the steps as two columns (gen_sink_mass, gen_recent_mass).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/head_metrics.h"
#include "view/view_model.h"

namespace attnscope {

inline constexpr int64_t kDefaultRecentWindow = 8;

// What a series' plot shows: its y-range, and the values printed beside it.
struct SeriesScale {
  float lo = 0.0f, hi = 1.0f;   // the plot's range: the series' min..max, widened to at least
                                // kMinPlotSpan around its middle, within [0, 1]
  float min = 0.0f, max = 0.0f, last = 0.0f;
  double mean = 0.0;
};
inline constexpr float kMinPlotSpan = 0.01f;
SeriesScale seriesScale(const float* values, int64_t count);  // count >= 1

struct GenerationMass {
  int64_t layers = 0, H = 0, B = 0;
  int64_t first = 0, steps = 0, window = 0;  // rows first .. first + steps - 1
  std::vector<float> sink, recent;           // [layers, B, H, steps]
  const float* sinkSeries(int64_t layer, int64_t b, int64_t h) const { return &sink[index(layer, b, h)]; }
  const float* recentSeries(int64_t layer, int64_t b, int64_t h) const { return &recent[index(layer, b, h)]; }
  // The plots' scales, made once with the series: [layers, B, H].
  std::vector<SeriesScale> sink_scale, recent_scale;
  const SeriesScale& sinkScale(int64_t layer, int64_t b, int64_t h) const { return sink_scale[index(layer, b, h) / steps]; }
  const SeriesScale& recentScale(int64_t layer, int64_t b, int64_t h) const { return recent_scale[index(layer, b, h) / steps]; }

 private:
  size_t index(int64_t layer, int64_t b, int64_t h) const {
    return static_cast<size_t>(((layer * B + b) * H + h) * steps);
  }
};

// The series of a view with view.first_generated >= 0 (steps = 0 otherwise, or for a
// tiled view, whose full maps are not held). window >= 1.
GenerationMass generationMass(const ViewModel& view, int64_t window);

// Sets each row's gen_sink_mass and gen_recent_mass to the means over the steps (left NaN
// when the view is no generation).
void addGenerationMass(const ViewModel& view, int64_t window, std::vector<HeadMetrics>& rows);

}  // namespace attnscope
