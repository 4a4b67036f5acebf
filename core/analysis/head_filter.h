// The head table's filter: which rows (heads) a typed filter keeps. Words separated by
// spaces, every one of which a row must match:
//   METRIC>V, METRIC>=V, METRIC<V, METRIC<=V  a threshold on a metric column, named by its
//       JSON name or heading without spaces ("entropy_bits>2", "sink<0.1", "induction>=0.4");
//       a row whose value is NaN never passes;
//   any other word  case-insensitive, the start of one of the row's words (its label,
//       "L3 H5" or "head 2", and the patterns training.json names for it: "induc" finds
//       "induction"); a word ending in a digit must be the whole word ("L1" is not "L10").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/head_metrics.h"

namespace attnscope {

struct HeadThreshold {
  const MetricInfo* metric = nullptr;
  bool greater = true;   // > / >= (else < / <=)
  bool or_equal = false;
  double value = 0;
  bool passes(const HeadMetrics& m) const;
};

struct HeadFilter {
  std::vector<std::string> words;         // lower-case
  std::vector<HeadThreshold> thresholds;
  std::string error;                      // a threshold that names no metric or no number ("" = fine)
  bool empty() const { return words.empty() && thresholds.empty(); }
  // The row passes every word (text: its label and patterns) and every threshold.
  bool passes(const HeadMetrics& m, const std::string& text) const;
};

HeadFilter parseHeadFilter(const std::string& text);

}  // namespace attnscope
