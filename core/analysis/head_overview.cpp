#include "analysis/head_overview.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope {

namespace {

// measured: some value is finite (else there is no auto range to judge).
OverviewScale scaleOf(const HeadOverview& o, const MetricInfo& metric, const HeadTable& table, bool auto_range,
                      bool measured) {
  const MetricRange fixed = metric.range(table.L, table.S);
  OverviewScale scale;
  scale.automatic = auto_range;
  scale.rule = metric.range_rule;
  scale.low = auto_range ? o.low : fixed.low;
  scale.high = auto_range ? o.high : fixed.high;
  const double fixed_span = fixed.high - fixed.low, span = o.high - o.low;
  scale.narrow = auto_range && measured && fixed_span > 0 && span < kNarrowRangeFraction * fixed_span;
  if (scale.narrow) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "narrow range: %.3g .. %.3g is %.2g%% of %s's %.3g .. %.3g, so small differences look large",
                  o.low, o.high, 100.0 * span / fixed_span, metric.heading, fixed.low, fixed.high);
    scale.warning = text;
  }
  return scale;
}

}  // namespace

HeadOverview headOverview(const HeadTable& table, const MetricInfo& metric, int64_t b, bool auto_range) {
  HeadOverview o;
  o.layers = table.layers, o.H = table.H, o.metric = metric.name;
  o.values.reserve(static_cast<size_t>(table.layers * table.H));
  bool any = false;
  for (int64_t layer = 0; layer < table.layers; ++layer)
    for (int64_t head = 0; head < table.H; ++head) {
      const double v = table.row(layer, head, b).*metric.field;
      o.values.push_back(v);
      if (!std::isfinite(v)) continue;
      o.low = any ? std::min(o.low, v) : v;
      o.high = any ? std::max(o.high, v) : v;
      any = true;
    }
  o.scale = scaleOf(o, metric, table, auto_range, any);
  return o;
}

HeadOverview effectOverview(const Tensor& effect) {
  HeadOverview o;
  o.layers = effect.shape.at(0), o.H = effect.shape.at(1), o.metric = kSweepMetric;
  o.values.assign(effect.data.begin(), effect.data.end());
  const auto [low, high] = std::minmax_element(o.values.begin(), o.values.end());
  if (low != o.values.end()) o.low = *low, o.high = *high;
  const double reach = std::max(std::abs(o.low), std::abs(o.high));
  o.scale.rule = "+-max";
  o.scale.low = reach > 0 ? -reach : -1.0;
  o.scale.high = reach > 0 ? reach : 1.0;
  return o;
}

}  // namespace attnscope
