#include "analysis/generation_mass.h"

#include <algorithm>

namespace attnscope {

SeriesScale seriesScale(const float* values, int64_t count) {
  SeriesScale s;
  s.min = s.max = values[0];
  for (int64_t i = 0; i < count; ++i) {
    s.min = std::min(s.min, values[i]), s.max = std::max(s.max, values[i]);
    s.mean += values[i];
  }
  s.mean /= static_cast<double>(count);
  s.last = values[count - 1];
  s.lo = s.min, s.hi = s.max;
  if (s.max - s.min >= kMinPlotSpan) return s;
  s.lo = std::max(0.0f, (s.min + s.max) / 2.0f - kMinPlotSpan / 2.0f);
  s.hi = std::min(1.0f, s.lo + kMinPlotSpan);
  s.lo = std::max(0.0f, s.hi - kMinPlotSpan);  // near 1: shifted down, the same span
  s.lo = std::min(s.lo, s.min), s.hi = std::max(s.hi, s.max);  // never cut by rounding
  return s;
}

GenerationMass generationMass(const ViewModel& view, int64_t window) {
  GenerationMass m;
  m.layers = view.layers, m.H = view.H, m.B = view.B;
  m.window = std::max<int64_t>(1, window);
  if (view.first_generated < 0 || view.first_generated >= view.L || view.tiled) return m;
  m.first = view.first_generated;
  m.steps = view.L - view.first_generated;
  m.sink.resize(static_cast<size_t>(m.layers * m.B * m.H * m.steps));
  m.recent.resize(m.sink.size());
  const int64_t L = view.L, S = view.S;
  size_t out = 0;
  for (int64_t layer = 0; layer < m.layers; ++layer)
    for (int64_t bh = 0; bh < m.B * m.H; ++bh) {
      const float* map = view.maps[layer].probs.get() + bh * L * S;  // [L, S]
      for (int64_t t = m.first; t < L; ++t, ++out) {
        const float* row = map + t * S;
        const int64_t last = std::min(t, S - 1);
        double recent = 0.0;
        for (int64_t j = std::max<int64_t>(0, t - m.window + 1); j <= last; ++j) recent += row[j];
        m.sink[out] = row[0];
        m.recent[out] = static_cast<float>(recent);
      }
      m.sink_scale.push_back(seriesScale(&m.sink[out - m.steps], m.steps));
      m.recent_scale.push_back(seriesScale(&m.recent[out - m.steps], m.steps));
    }
  return m;
}

void addGenerationMass(const ViewModel& view, int64_t window, std::vector<HeadMetrics>& rows) {
  const GenerationMass m = generationMass(view, window);
  if (m.steps == 0) return;
  for (HeadMetrics& row : rows) {
    const float* sink = m.sinkSeries(row.layer, row.batch, row.head);
    const float* recent = m.recentSeries(row.layer, row.batch, row.head);
    double sink_sum = 0.0, recent_sum = 0.0;
    for (int64_t s = 0; s < m.steps; ++s) sink_sum += sink[s], recent_sum += recent[s];
    row.gen_sink_mass = sink_sum / static_cast<double>(m.steps);
    row.gen_recent_mass = recent_sum / static_cast<double>(m.steps);
  }
}

}  // namespace attnscope
