// The layers x heads overview (core/analysis/head_overview.h) and the head table's filter
// (core/analysis/head_filter.h), and the head groups' average linkage at hundreds of heads
// (core/analysis/head_clusters.h): the overview's values are the table's rows in layer-major
// order with their finite range (a reference min/max written here, NaN skipped), at the
// head counts the app must handle; the filter's words and thresholds keep the rows a plain
// reference predicate keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "analysis/head_clusters.h"
#include "analysis/head_filter.h"
#include "analysis/head_metrics.h"
#include "analysis/head_overview.h"
#include "analysis/map_stack.h"

namespace attnscope {
namespace {

// A table of layers x H heads (B = 2) whose metrics are arbitrary distinct numbers; every
// 7th head's induction is NaN (no repeated segment).
HeadTable syntheticTable(int64_t layers, int64_t H) {
  HeadTable t;
  t.layers = layers, t.H = H, t.B = 2;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t b = 0; b < 2; ++b) {
        HeadMetrics m;
        m.layer = l, m.head = h, m.batch = b;
        const double x = static_cast<double>((l * 31 + h * 17 + b * 5) % 101);
        m.entropy_bits = x / 10, m.sink_mass = 1.0 - x / 100, m.prev_mass = x / 200, m.max_prob = x / 101;
        m.induction = (l * H + h) % 7 == 0 ? std::numeric_limits<double>::quiet_NaN() : x / 50;
        t.metrics.push_back(m);
      }
  return t;
}

TEST(HeadOverview, ValuesAndRangeAtEveryHeadCount) {
  struct Case {
    int64_t layers, H;
  };
  for (const Case c : {Case{1, 2}, Case{12, 12}, Case{16, 32}, Case{32, 32}}) {
    const HeadTable t = syntheticTable(c.layers, c.H);
    for (const MetricInfo& info : headMetricInfos())
      for (int64_t b = 0; b < 2; ++b) {
        const HeadOverview o = headOverview(t, info, b);
        ASSERT_EQ(o.values.size(), static_cast<size_t>(c.layers * c.H));
        EXPECT_EQ(o.metric, info.name);
        double low = INFINITY, high = -INFINITY;
        for (int64_t l = 0; l < c.layers; ++l)
          for (int64_t h = 0; h < c.H; ++h) {
            const double want = t.row(l, h, b).*info.field;
            const double got = o.at(l, h);
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(got));
              continue;
            }
            EXPECT_EQ(got, want);
            low = std::min(low, want), high = std::max(high, want);
          }
        if (low > high) low = high = 0.0;  // no finite value (the generation columns outside one): empty range
        EXPECT_EQ(o.low, low) << info.name;
        EXPECT_EQ(o.high, high) << info.name;
      }
  }
}

TEST(HeadOverview, NoFiniteValueGivesAnEmptyRange) {
  HeadTable t = syntheticTable(2, 2);
  for (HeadMetrics& m : t.metrics) m.induction = std::numeric_limits<double>::quiet_NaN();
  const HeadOverview o = headOverview(t, *findHeadMetric("induction"), 0);
  EXPECT_EQ(o.low, 0.0);
  EXPECT_EQ(o.high, 0.0);
}

// The fixed colour ranges (MetricInfo::range): what each metric can be, written out here.
MetricRange referenceRange(const std::string& metric, int64_t L, int64_t S) {
  if (metric == "entropy_bits") return {0.0, std::log2(static_cast<double>(S))};  // uniform over S keys
  if (metric == "mean_distance") return {0.0, static_cast<double>(std::max(L, S) - 1)};
  if (metric == "effective_keys") return {1.0, static_cast<double>(S)};
  return {0.0, 1.0};  // probability masses: max p, sink, diag, prev, induction, gen_*
}

// Maps [L, S] whose every row is one-hot on `key(i)`, or uniform when key(i) < 0.
Tensor rowsOn(int64_t L, int64_t S, const std::function<int64_t(int64_t)>& key) {
  Tensor probs({1, 1, L, S});
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j)
      probs.data[i * S + j] = key(i) < 0 ? 1.0f / static_cast<float>(S) : (j == key(i) ? 1.0f : 0.0f);
  return probs;
}

TEST(MetricRange, EveryMetricsFixedRangeIsWhatItCanBe) {
  for (const auto& [L, S] : std::vector<std::pair<int64_t, int64_t>>{{16, 16}, {1004, 1004}, {8, 32}, {40, 10}})
    for (const MetricInfo& info : headMetricInfos()) {
      const MetricRange got = info.range(L, S), want = referenceRange(info.name, L, S);
      EXPECT_DOUBLE_EQ(got.low, want.low) << info.name << " L=" << L << " S=" << S;
      EXPECT_DOUBLE_EQ(got.high, want.high) << info.name << " L=" << L << " S=" << S;
    }
  EXPECT_STREQ(findHeadMetric("entropy_bits")->range_rule, "0..log2(S)");
  EXPECT_STREQ(findHeadMetric("induction")->range_rule, "0..1");
  // The ends are reached: a uniform map has entropy log2(S) and S effective keys; a map on
  // the first key has entropy 0, sink and max p 1; on the diagonal, diag 1; on the key
  // before, prev 1; from the last query to key 0, the largest distance.
  const int64_t L = 16, S = 16;
  const auto metric = [](const Tensor& probs, double HeadMetrics::*field) { return headMetrics(mapStackOf(probs))[0].*field; };
  const MetricRange entropy = findHeadMetric("entropy_bits")->range(L, S);
  EXPECT_NEAR(metric(rowsOn(L, S, [](int64_t) { return -1; }), &HeadMetrics::entropy_bits), entropy.high, 1e-5);
  EXPECT_NEAR(metric(rowsOn(L, S, [](int64_t) { return -1; }), &HeadMetrics::effective_keys),
              findHeadMetric("effective_keys")->range(L, S).high, 1e-4);
  EXPECT_EQ(metric(rowsOn(L, S, [](int64_t) { return 0; }), &HeadMetrics::entropy_bits), entropy.low);
  EXPECT_EQ(metric(rowsOn(L, S, [](int64_t) { return 0; }), &HeadMetrics::sink_mass), 1.0);
  EXPECT_EQ(metric(rowsOn(L, S, [](int64_t i) { return i; }), &HeadMetrics::diag_mass), 1.0);
  EXPECT_EQ(metric(rowsOn(L, S, [](int64_t i) { return std::max<int64_t>(i - 1, 0); }), &HeadMetrics::prev_mass), 1.0);
  const Tensor far = rowsOn(1, S, [&](int64_t) { return S - 1; });  // one query at 0, its key at S - 1
  EXPECT_EQ(metric(far, &HeadMetrics::mean_distance), findHeadMetric("mean_distance")->range(1, S).high);
}

// The overview's scale: the fixed range by default; auto spans the values and flags a range
// narrower than a tenth of the fixed one (the induction heads at 0.0178 .. 0.0223).
TEST(HeadOverview, FixedRangeByDefaultAutoOnRequestWithANarrowWarning) {
  HeadTable t = syntheticTable(2, 3);
  t.L = t.S = 100;
  const double induction[] = {0.0178, 0.02, 0.0223, 0.019, 0.021, 0.0181};
  for (HeadMetrics& m : t.metrics) m.induction = induction[m.layer * 3 + m.head];
  const MetricInfo& info = *findHeadMetric("induction");
  const HeadOverview fixed = headOverview(t, info, 0);
  EXPECT_FALSE(fixed.scale.automatic);
  EXPECT_EQ(fixed.scale.low, 0.0);
  EXPECT_EQ(fixed.scale.high, 1.0);
  EXPECT_EQ(fixed.scale.rule, "0..1");
  EXPECT_FALSE(fixed.scale.narrow);
  EXPECT_EQ(fixed.scale.warning, "");
  EXPECT_EQ(fixed.low, 0.0178);  // the values' own range is still reported
  EXPECT_EQ(fixed.high, 0.0223);
  const HeadOverview automatic = headOverview(t, info, 0, true);
  EXPECT_TRUE(automatic.scale.automatic);
  EXPECT_EQ(automatic.scale.low, 0.0178);
  EXPECT_EQ(automatic.scale.high, 0.0223);
  EXPECT_TRUE(automatic.scale.narrow);
  EXPECT_EQ(automatic.scale.warning,
            "narrow range: 0.0178 .. 0.0223 is 0.45% of induction's 0 .. 1, so small differences look large");
  // Entropy against log2(S) bits; an auto range over more than a tenth of it is not flagged.
  const MetricInfo& entropy = *findHeadMetric("entropy_bits");
  const HeadOverview bits = headOverview(t, entropy, 0);
  EXPECT_EQ(bits.scale.rule, "0..log2(S)");
  EXPECT_DOUBLE_EQ(bits.scale.high, std::log2(100.0));
  for (HeadMetrics& m : t.metrics) m.entropy_bits = m.head < 2 ? 1.0 : 1.0 + 0.1 * std::log2(100.0) + 1e-9;
  EXPECT_FALSE(headOverview(t, entropy, 0, true).scale.narrow);
  for (HeadMetrics& m : t.metrics) m.entropy_bits = m.head < 2 ? 1.0 : 1.0 + 0.1 * std::log2(100.0) - 1e-6;
  EXPECT_TRUE(headOverview(t, entropy, 0, true).scale.narrow);
  // Nothing measured: no auto range to judge.
  for (HeadMetrics& m : t.metrics) m.induction = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(headOverview(t, info, 0, true).scale.narrow);
}

TEST(HeadFilter, WordsAndThresholdsKeepWhatAReferenceKeeps) {
  const HeadTable t = syntheticTable(12, 12);
  struct Case {
    std::string filter;
    std::function<bool(const HeadMetrics&)> keep;  // the reference predicate
  };
  const std::vector<Case> cases = {
      {"", [](const HeadMetrics&) { return true; }},
      {"L1", [](const HeadMetrics& m) { return m.layer == 1; }},  // not L10, L11
      {"l3 h5", [](const HeadMetrics& m) { return m.layer == 3 && m.head == 5; }},
      {"entropy>5", [](const HeadMetrics& m) { return m.entropy_bits > 5; }},
      {"entropy_bits>=5", [](const HeadMetrics& m) { return m.entropy_bits >= 5; }},
      {"sink<0.3", [](const HeadMetrics& m) { return m.sink_mass < 0.3; }},
      {"prev<=0.25 L2", [](const HeadMetrics& m) { return m.prev_mass <= 0.25 && m.layer == 2; }},
      {"induction>0.5", [](const HeadMetrics& m) { return !std::isnan(m.induction) && m.induction > 0.5; }},
      {"induc", [](const HeadMetrics& m) { return m.layer == 4 && m.head == 4; }},  // the pattern of L4 H4 below
      {"maxp>0.9", [](const HeadMetrics& m) { return m.max_prob > 0.9; }},        // heading "max p" without its space
  };
  for (const Case& c : cases) {
    const HeadFilter f = parseHeadFilter(c.filter);
    EXPECT_EQ(f.error, "") << c.filter;
    int64_t kept = 0;
    for (int64_t l = 0; l < 12; ++l)
      for (int64_t h = 0; h < 12; ++h) {
        const HeadMetrics& m = t.row(l, h, 0);
        const std::string text = "L" + std::to_string(l) + " H" + std::to_string(h) + (l == 4 && h == 4 ? " induction" : "");
        EXPECT_EQ(f.passes(m, text), c.keep(m)) << c.filter << " at L" << l << " H" << h;
        kept += f.passes(m, text);
      }
    if (!c.filter.empty()) {
      EXPECT_LT(kept, 144) << c.filter;  // each case keeps fewer than all
    }
  }
}

TEST(HeadFilter, BadThresholdsSayWhy) {
  EXPECT_EQ(parseHeadFilter("bogus>1").error, "\"bogus\" is not a metric (e.g. entropy, sink, prev, induction)");
  EXPECT_EQ(parseHeadFilter("entropy>abc").error, "\"abc\" is not a number (in entropy>abc)");
  EXPECT_TRUE(parseHeadFilter("entropy>abc").thresholds.empty());
}

// Average linkage as a plain reference: every merge recomputes every pair of groups' mean
// correlation from their members (ties: the first pair in group order).
std::vector<int64_t> referenceGroups(const std::vector<std::vector<double>>& v, double min_correlation) {
  const size_t N = v.size();
  std::vector<std::vector<size_t>> groups;
  for (size_t n = 0; n < N; ++n) groups.push_back({n});
  for (;;) {
    double best = -2;
    size_t bx = 0, by = 0;
    for (size_t x = 0; x < groups.size(); ++x)
      for (size_t y = x + 1; y < groups.size(); ++y) {
        double sum = 0;
        for (size_t a : groups[x])
          for (size_t b : groups[y]) sum += pearson(v[a], v[b]);
        const double mean = sum / static_cast<double>(groups[x].size() * groups[y].size());
        if (mean > best) best = mean, bx = x, by = y;
      }
    if (groups.size() < 2 || best < min_correlation) break;
    groups[bx].insert(groups[bx].end(), groups[by].begin(), groups[by].end());
    std::sort(groups[bx].begin(), groups[bx].end());
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(by));
  }
  std::sort(groups.begin(), groups.end());
  std::vector<int64_t> group(N);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t n : groups[g]) group[n] = static_cast<int64_t>(g);
  return group;
}

TEST(HeadGroups, AverageLinkageMatchesAPlainReferenceAtManyHeads) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const double noise : {0.3, 1.0}) {
    // 120 heads, each one of 7 prototypes plus noise.
    std::vector<std::vector<double>> prototypes(7, std::vector<double>(24)), heads;
    for (auto& p : prototypes)
      for (double& x : p) x = normal(rng);
    for (int n = 0; n < 120; ++n) {
      std::vector<double> h = prototypes[static_cast<size_t>(n * 5 % 7)];
      for (double& x : h) x += noise * normal(rng);
      heads.push_back(h);
    }
    for (const double threshold : {0.2, 0.5, 0.8}) {
      const HeadClusters c = clusterVectors(heads, threshold);
      const std::vector<int64_t> want = referenceGroups(heads, threshold);
      EXPECT_EQ(c.group, want) << "noise " << noise << ", threshold " << threshold;
      EXPECT_EQ(c.count, *std::max_element(want.begin(), want.end()) + 1);
    }
  }
}

}  // namespace
}  // namespace attnscope
