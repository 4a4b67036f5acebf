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

struct GenerationMass {
  int64_t layers = 0, H = 0, B = 0;
  int64_t first = 0, steps = 0, window = 0;  // rows first .. first + steps - 1
  std::vector<float> sink, recent;           // [layers, B, H, steps]
  const float* sinkSeries(int64_t layer, int64_t b, int64_t h) const { return &sink[index(layer, b, h)]; }
  const float* recentSeries(int64_t layer, int64_t b, int64_t h) const { return &recent[index(layer, b, h)]; }

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
