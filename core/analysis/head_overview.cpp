#include "analysis/head_overview.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

HeadOverview headOverview(const HeadTable& table, const MetricInfo& metric, int64_t b) {
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
  return o;
}

}  // namespace attnscope
