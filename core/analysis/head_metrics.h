// Head analytics: one row of numbers per (layer, head, batch item), each a mean over the
// query rows that are not fully masked (see MapStack), computed from the probabilities.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "analysis/map_stack.h"
#include "attention/tiles.h"

namespace attnscope {

struct HeadMetrics {
  int64_t layer = 0, head = 0, batch = 0;
  double entropy_bits = 0;    // -sum_j p log2 p (0 log 0 = 0)
  double max_prob = 0;        // max_j p
  double mean_distance = 0;   // sum_j p |i - j|, in positions
  double sink_mass = 0;       // p[i, 0]
  double diag_mass = 0;       // p[i, i] (0 for i >= S)
  double prev_mass = 0;       // p[i, i - 1] over rows i >= 1 (0 for i - 1 >= S); NaN when none
  double effective_keys = 0;  // 2^(row entropy in bits), averaged per row
  double induction = 0;       // see inductionScore; NaN without a repeated segment
  // Over a generation (analysis/generation_mass.h): the means over the generated steps of
  // p[t, 0] and of the mass on the last W keys; NaN when the maps are no generation.
  double gen_sink_mass = std::numeric_limits<double>::quiet_NaN();
  double gen_recent_mass = std::numeric_limits<double>::quiet_NaN();
  int64_t rows = 0;           // query rows in the means (NaN metrics when 0)
};

// A metric's fixed colour range over maps of L queries and S keys: what it can be, so that a
// colour means the same value whichever heads are on screen (the overview's default scale).
struct MetricRange {
  double low = 0, high = 1;
};

// The metric columns, in table order: one row per metric (table, JSON and GUI use it).
struct MetricInfo {
  const char* name;         // JSON field: "entropy_bits", ...
  const char* heading;      // short column heading: "entropy", ...
  const char* description;  // one line, with units
  double HeadMetrics::*field;
  // Its fixed range: the rule as written ("0..1", "0..log2(S)": entropy in bits against
  // its maximum, S keys) and its value for maps of L queries and S keys.
  const char* range_rule;
  MetricRange (*range)(int64_t L, int64_t S);
};
const std::vector<MetricInfo>& headMetricInfos();  // the seven issue metrics, then induction
// The two columns over a generation (gen_sink_mass, gen_recent_mass): outputs that are not
// about a generation leave them out.
bool isGenerationMetric(const MetricInfo& info);
// nullptr when unknown.
const MetricInfo* findHeadMetric(const std::string& name);

// The longest token run that occurs twice without overlap (first < second), at least
// min_length tokens long; length 0 when there is none. Ties go to the earliest pair.
struct RepeatedSegment {
  int64_t first = 0, second = 0, length = 0;
  bool found() const { return length > 0; }
};
RepeatedSegment findRepeatedSegment(const std::vector<std::string>& tokens, int64_t min_length = 2);

// Induction score of one map [L, S]: the mean over the second copy's tokens
// i = second + k (k < length) of p[i, first + k + 1], the key right after that token's
// first occurrence. Rows flagged in fully_masked ([L] or nullptr) or summing to 0 are
// skipped. NaN when the segment is not found or no row counts.
double inductionScore(const float* map, int64_t L, int64_t S, const RepeatedSegment& segment,
                      const uint8_t* fully_masked = nullptr);
// [L]: the key whose probability query row i's induction score reads (first + k + 1 for
// i = second + k), -1 for rows outside the second copy or keys past S.
std::vector<int64_t> inductionKeys(const RepeatedSegment& segment, int64_t L, int64_t S);

// The induction probe's N (model/induction_probe.h): tokens that are a first token, then N >= 2
// tokens, then the same N again (L = 2N + 1); 0 for any other text.
int64_t probeLength(const std::vector<std::string>& tokens);
// [L]: the stripe diagonal(offset = 1 - N) as induction keys: query i reads key i - N + 1 for
// i = N - 1 .. L - 1 (keys past S: -1).
std::vector<int64_t> stripeKeys(int64_t N, int64_t L, int64_t S);
// TransformerLens' induction score of one map [L, S] on a probe of N (the induction-head
// literature's): the mean of the stripe pattern.diagonal(offset = 1 - N), p[i, i - N + 1]
// over i = N - 1 .. L - 1 (N + 2 entries when L = 2N + 1: the second copy's N, and the first
// copy's last two tokens). NaN when the stripe is empty.
double inductionStripeScore(const float* map, int64_t L, int64_t S, int64_t N);
// The induction column's keys [L] of a text's tokens: the stripe on a probe, else the longest
// repeated segment's (inductionKeys); empty when neither (or L != S).
std::vector<int64_t> inductionKeysOf(const std::vector<std::string>& tokens, int64_t L, int64_t S);

// Means of one map's sums (attention/tiles.h: the full maps and the tiled overview's pass
// sum alike): NaN where no row counts (induction: no row with an induction key).
HeadMetrics headMetricsOf(const MetricSums& sums);

// Row indices ordered by one metric (largest first when descending); NaN rows go last,
// ties keep the rows' order (layer, head, batch item).
std::vector<size_t> orderBy(const std::vector<HeadMetrics>& rows, const MetricInfo& metric, bool descending);

// Every (layer, head, batch item), ordered by layer, then head, then batch item. The
// induction column uses the stack's tokens (inductionKeysOf; NaN when none, when L != S, or
// no probe and no segment).
// keep_going (when set) is asked before each map; once it says false: Cancelled.
std::vector<HeadMetrics> headMetrics(const MapStack& maps, const std::function<bool()>& keep_going = {});

}  // namespace attnscope
