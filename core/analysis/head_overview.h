// The layers x heads overview of a head table: one metric's value per head of one batch
// item, with the range its colours span, so that 144 to 1024 heads fit one panel as one
// coloured cell each (the app draws it; the numbers are made here, off the draw code).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/head_table.h"

namespace attnscope {

// An auto range narrower than this fraction of the metric's fixed range is flagged: its
// colours stretch differences that small over the whole colour map.
inline constexpr double kNarrowRangeFraction = 0.1;

// The range the colours span: by default the metric's fixed range (MetricInfo::range over
// the table's L and S), so that a colour means one value whichever heads are shown; with
// auto, the finite values' own min and max.
struct OverviewScale {
  bool automatic = false;
  double low = 0, high = 1;
  std::string rule;     // the fixed range's rule ("0..1", "0..log2(S)"); the same under auto
  bool narrow = false;  // auto over less than kNarrowRangeFraction of the fixed range
  std::string warning;  // one line when narrow, else ""
};

struct HeadOverview {
  int64_t layers = 0, H = 0;
  std::string metric;          // the metric's JSON name ("entropy_bits", ...)
  std::vector<double> values;  // [layers, H], row-major: head n = layer * H + head; NaN = not measured
  double low = 0, high = 0;    // the finite values' min and max (0, 0 when none is finite)
  OverviewScale scale;         // what the colours span
  double at(int64_t layer, int64_t head) const { return values[static_cast<size_t>(layer * H + head)]; }
};

// Metric `metric` of every head of batch item b (b < table.B), coloured over its fixed range
// or, with auto_range, over the values' own.
HeadOverview headOverview(const HeadTable& table, const MetricInfo& metric, int64_t b, bool auto_range = false);

// The ablation sweep's overview (model/ablation_sweep.h): effect [N, H], the change in the
// top prediction's log-probability with each head ablated alone, as metric kSweepMetric; the
// colours span -max|v| .. +max|v| (0 in the middle of a diverging map; +-1 when all are 0).
inline constexpr const char* kSweepMetric = "ablation_effect";
HeadOverview effectOverview(const Tensor& effect);

}  // namespace attnscope
