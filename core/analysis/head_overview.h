// The layers x heads overview of a head table: one metric's value per head of one batch
// item, with the range its colours span, so that 144 to 1024 heads fit one panel as one
// coloured cell each (the app draws it; the numbers are made here, off the draw code).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/head_table.h"

namespace attnscope {

struct HeadOverview {
  int64_t layers = 0, H = 0;
  std::string metric;          // the metric's JSON name ("entropy_bits", ...)
  std::vector<double> values;  // [layers, H], row-major: head n = layer * H + head; NaN = not measured
  double low = 0, high = 0;    // the finite values' min and max (0, 0 when none is finite)
  double at(int64_t layer, int64_t head) const { return values[static_cast<size_t>(layer * H + head)]; }
};

// Metric `metric` of every head of batch item b (b < table.B).
HeadOverview headOverview(const HeadTable& table, const MetricInfo& metric, int64_t b);

}  // namespace attnscope
