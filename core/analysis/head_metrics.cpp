#include "analysis/head_metrics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tensor/interrupt.h"

namespace attnscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A row counts when it is not flagged and holds some probability.
bool rowCounts(const float* row, int64_t S, const uint8_t* fully_masked, int64_t i) {
  if (fully_masked && fully_masked[i]) return false;
  for (int64_t j = 0; j < S; ++j)
    if (row[j] != 0.0f) return true;
  return false;
}

// One map [L, S]: the sums of every metric over its counted rows; induction_keys [L] or null.
MetricSums sumsOfMap(const float* map, int64_t L, int64_t S, const uint8_t* fully_masked, const int64_t* induction_keys) {
  MetricSums m;
  for (int64_t i = 0; i < L; ++i) {
    const float* row = map + i * S;  // [S]
    if (!rowCounts(row, S, fully_masked, i)) continue;
    // Only keys [first, last] can hold probability: zeros add nothing to any sum (a causal
    // row i has S - 1 - i of them), so skipping them leaves every number as it was.
    int64_t first = 0, last = S - 1;
    while (row[first] == 0.0f) ++first;  // the row holds a nonzero (rowCounts)
    while (row[last] == 0.0f) --last;
    double entropy = 0, max_p = 0, distance = 0;
    for (int64_t j = first; j <= last; ++j) {
      const double p = row[j];
      if (p > 0) entropy -= p * std::log2(p);
      max_p = std::max(max_p, p);
      distance += p * static_cast<double>(std::llabs(i - j));
    }
    ++m.rows;
    m.entropy_bits += entropy;
    m.max_prob += max_p;
    m.mean_distance += distance;
    m.effective_keys += std::exp2(entropy);
    m.addRowPicks(row, S, i, induction_keys ? induction_keys[i] : -1);
  }
  return m;
}

}  // namespace

namespace {

// The fixed ranges (MetricInfo::range): a probability mass; entropy against its maximum
// log2(S) (a uniform row over every key); a distance that can reach the farthest position;
// a count of keys from one to all.
MetricRange probabilityRange(int64_t, int64_t) { return {0.0, 1.0}; }
MetricRange entropyRange(int64_t, int64_t S) { return {0.0, std::log2(static_cast<double>(std::max<int64_t>(S, 1)))}; }
MetricRange distanceRange(int64_t L, int64_t S) { return {0.0, static_cast<double>(std::max<int64_t>(std::max(L, S) - 1, 0))}; }
MetricRange keysRange(int64_t, int64_t S) { return {1.0, static_cast<double>(std::max<int64_t>(S, 1))}; }

}  // namespace

const std::vector<MetricInfo>& headMetricInfos() {
  static const std::vector<MetricInfo> infos = {
      {"entropy_bits", "entropy", "row entropy -sum p log2 p, in bits (0 = one key, log2 S = uniform)",
       &HeadMetrics::entropy_bits, "0..log2(S)", entropyRange},
      {"max_prob", "max p", "largest probability of the row", &HeadMetrics::max_prob, "0..1", probabilityRange},
      {"mean_distance", "distance", "expected |query - key| position distance, in tokens",
       &HeadMetrics::mean_distance, "0..max(L,S)-1", distanceRange},
      {"sink_mass", "sink", "probability on the first key (attention sink)", &HeadMetrics::sink_mass, "0..1",
       probabilityRange},
      {"diag_mass", "diag", "probability on the key at the query's own position", &HeadMetrics::diag_mass, "0..1",
       probabilityRange},
      {"prev_mass", "prev", "probability on the previous position (rows i >= 1)", &HeadMetrics::prev_mass, "0..1",
       probabilityRange},
      {"effective_keys", "eff. keys", "2^entropy: how many keys the row effectively spreads over",
       &HeadMetrics::effective_keys, "1..S", keysRange},
      {"induction", "induction", "repeated segment: probability on the token after the first occurrence",
       &HeadMetrics::induction, "0..1", probabilityRange},
      {"gen_sink_mass", "gen sink", "generation: mean over the generated steps of the probability on the first token",
       &HeadMetrics::gen_sink_mass, "0..1", probabilityRange},
      {"gen_recent_mass", "gen last W",
       "generation: mean over the generated steps of the probability on the last W tokens (W = 8 unless set)",
       &HeadMetrics::gen_recent_mass, "0..1", probabilityRange},
  };
  return infos;
}

bool isGenerationMetric(const MetricInfo& info) {
  return info.field == &HeadMetrics::gen_sink_mass || info.field == &HeadMetrics::gen_recent_mass;
}

const MetricInfo* findHeadMetric(const std::string& name) {
  for (const MetricInfo& info : headMetricInfos())
    if (name == info.name) return &info;
  return nullptr;
}

RepeatedSegment findRepeatedSegment(const std::vector<std::string>& tokens, int64_t min_length) {
  // run[j]: length of the common run ending at tokens (i - 1, j), next[j] the same for
  // (i, j); a run is capped at j - i so that the two copies never overlap (the cap is
  // constant along a diagonal, so capping each step gives min(run, j - i)).
  const int64_t n = static_cast<int64_t>(tokens.size());
  RepeatedSegment best;
  std::vector<int64_t> run(static_cast<size_t>(n), 0), next(run.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::fill(next.begin(), next.end(), 0);
    for (int64_t j = i + 1; j < n; ++j) {
      if (tokens[i] != tokens[j]) continue;
      const int64_t length = std::min(run[j - 1] + 1, j - i);
      next[j] = length;
      const int64_t start_first = i - length + 1, start_second = j - length + 1;
      if (length > best.length ||
          (length == best.length && (start_first < best.first ||
                                     (start_first == best.first && start_second < best.second)))) {
        best = {start_first, start_second, length};
      }
    }
    std::swap(run, next);
  }
  if (best.length < std::max<int64_t>(min_length, 1)) return {};
  return best;
}

std::vector<int64_t> inductionKeys(const RepeatedSegment& segment, int64_t L, int64_t S) {
  std::vector<int64_t> keys(static_cast<size_t>(L), -1);
  for (int64_t k = 0; k < segment.length; ++k) {
    const int64_t i = segment.second + k, j = segment.first + k + 1;
    if (i < L && j < S) keys[i] = j;
  }
  return keys;
}

int64_t probeLength(const std::vector<std::string>& tokens) {
  const int64_t L = static_cast<int64_t>(tokens.size()), N = (L - 1) / 2;
  if (L % 2 == 0 || N < 2) return 0;
  return std::equal(tokens.begin() + 1, tokens.begin() + 1 + N, tokens.begin() + 1 + N) ? N : 0;
}

std::vector<int64_t> stripeKeys(int64_t N, int64_t L, int64_t S) {
  std::vector<int64_t> keys(static_cast<size_t>(L), -1);
  for (int64_t i = std::max<int64_t>(N - 1, 0); i < L; ++i)
    if (i - N + 1 < S) keys[i] = i - N + 1;
  return keys;
}

double inductionStripeScore(const float* map, int64_t L, int64_t S, int64_t N) {
  double sum = 0.0;
  int64_t count = 0;
  for (int64_t i = std::max<int64_t>(N - 1, 0); i < L && i - N + 1 < S; ++i, ++count) sum += map[i * S + i - N + 1];
  return count > 0 ? sum / static_cast<double>(count) : kNaN;
}

std::vector<int64_t> inductionKeysOf(const std::vector<std::string>& tokens, int64_t L, int64_t S) {
  if (L != S) return {};
  if (const int64_t N = probeLength(tokens); N > 0 && static_cast<int64_t>(tokens.size()) == L) return stripeKeys(N, L, S);
  const RepeatedSegment segment = findRepeatedSegment(tokens);
  return segment.found() ? inductionKeys(segment, L, S) : std::vector<int64_t>{};
}

HeadMetrics headMetricsOf(const MetricSums& sums) {
  HeadMetrics m;
  m.rows = sums.rows;
  m.induction = sums.induction_rows > 0 ? sums.induction / static_cast<double>(sums.induction_rows) : kNaN;
  if (sums.rows == 0) {
    m.entropy_bits = m.max_prob = m.mean_distance = m.sink_mass = m.diag_mass = m.prev_mass = m.effective_keys = kNaN;
    return m;
  }
  const double n = static_cast<double>(sums.rows);
  m.entropy_bits = sums.entropy_bits / n;
  m.max_prob = sums.max_prob / n;
  m.mean_distance = sums.mean_distance / n;
  m.sink_mass = sums.sink_mass / n;
  m.diag_mass = sums.diag_mass / n;
  m.effective_keys = sums.effective_keys / n;
  m.prev_mass = sums.prev_rows > 0 ? sums.prev_mass / static_cast<double>(sums.prev_rows) : kNaN;
  return m;
}

double inductionScore(const float* map, int64_t L, int64_t S, const RepeatedSegment& segment,
                      const uint8_t* fully_masked) {
  if (!segment.found()) return kNaN;
  const std::vector<int64_t> keys = inductionKeys(segment, L, S);
  return headMetricsOf(sumsOfMap(map, L, S, fully_masked, keys.data())).induction;
}

std::vector<size_t> orderBy(const std::vector<HeadMetrics>& rows, const MetricInfo& metric, bool descending) {
  std::vector<size_t> order(rows.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double x = rows[a].*metric.field, y = rows[b].*metric.field;
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return descending ? x > y : x < y;
  });
  return order;
}

std::vector<HeadMetrics> headMetrics(const MapStack& maps, const std::function<bool()>& keep_going) {
  std::vector<std::vector<int64_t>> induction_keys(static_cast<size_t>(maps.B));  // [B][L] or empty
  for (int64_t b = 0; b < maps.B; ++b) {
    if (const std::vector<std::string>* tokens = maps.tokensOf(b)) induction_keys[b] = inductionKeysOf(*tokens, maps.L, maps.S);
  }
  const int64_t count = maps.layers * maps.H * maps.B;
  std::vector<HeadMetrics> rows(static_cast<size_t>(count));
  std::atomic<bool> stopped{false};
#pragma omp parallel for schedule(dynamic)
  for (int64_t n = 0; n < count; ++n) {
    if (stopped || (keep_going && !keep_going())) {
      stopped = true;
      continue;
    }
    const int64_t layer = n / (maps.H * maps.B), head = n / maps.B % maps.H, b = n % maps.B;
    const float* map = maps.map(layer, b, head);  // [L, S]
    const std::vector<int64_t>& keys = induction_keys[b];
    HeadMetrics m = headMetricsOf(sumsOfMap(map, maps.L, maps.S, maps.maskedRows(b), keys.empty() ? nullptr : keys.data()));
    m.layer = layer;
    m.head = head;
    m.batch = b;
    rows[n] = m;
  }
  if (stopped) throw Cancelled();
  return rows;
}

}  // namespace attnscope
