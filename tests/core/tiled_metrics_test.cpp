// Head analytics and mask counts of a tiled run against the full path (test-backend-ops style
// table): the app's tiled view (buildTiledView, measured in the overview's pass) and the full
// view of the same run (viewFromTrace of runAttention) give the same head table (every metric
// of headMetricInfos() within 1e-6, relative above 1; the same groups, correlations within
// 1e-6) and the same mask counts (allowed cells and fully masked rows of the real map), for
// every mask kind, both fills, variants, B > 1, L != S and a repeated-token input (induction).
// The streamed moments (attention/row_stats.h) against a float64 reference on one row.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>

#include "analysis/head_table.h"
#include "attention/row_stats.h"
#include "attention/tiles.h"
#include "config/run.h"
#include "reference.h"

namespace attnscope {
namespace {

struct MetricsCase {
  const char* name;
  int64_t B, L, S, D, H;
  bool self;
  const char* mask;
  MaskFill fill;
  double qk_gain;                      // larger: peakier rows
  std::vector<int64_t> valid_lens = {};
  bool key_padding = false;
  bool attn_mask = false;
  int64_t G = 0;                       // > 0: K/V heads
  bool rope = false;
  bool alibi = false;
  float softcap = 0.0f;
  int64_t repeat = 0;                  // > 0: tokens hold a segment of this length twice (induction)
};
std::ostream& operator<<(std::ostream& os, const MetricsCase& c) { return os << c.name; }

const MaskFill kInf = MaskFill::NegInf;
const MaskFill k1e9 = MaskFill::NegBillion;

//                 name                      B    L    S   D  H  self   mask                   fill  gain
const MetricsCase kCases[] = {
    {"none_inf",                             1,  40,  40, 16, 2, true,  "none",                kInf, 3.0},
    {"none_1e9_cross",                       2,  37,  29, 24, 3, false, "none",                k1e9, 3.0},
    {"causal_inf",                           1, 200, 200, 32, 4, true,  "causal",              kInf, 3.0},
    {"causal_1e9_flat",                      1, 200, 200, 32, 4, true,  "causal",              k1e9, 0.3},
    {"causal_br_inf",                        2,  20,  90, 16, 2, false, "causal-br",           kInf, 3.0},
    {"causal_br_L_gt_S_1e9",                 1,  90,  20, 16, 2, false, "causal-br",           k1e9, 3.0},
    {"window_inf",                           1, 150, 150, 16, 4, true,  "window:5",            kInf, 3.0},
    {"window_1e9",                           1, 150, 150, 16, 4, true,  "window:5",            k1e9, 1.0},
    {"causal_window_inf",                    2,  66,  66, 12, 3, true,  "causal-window:7",     kInf, 3.0},
    {"causal_window_1e9",                    2,  66,  66, 12, 3, true,  "causal-window:7",     k1e9, 3.0},
    {"prefix_inf",                           1, 130, 130, 16, 2, true,  "prefix:6",            kInf, 3.0},
    {"prefix_1e9",                           1, 130, 130, 16, 2, true,  "prefix:6",            k1e9, 3.0},
    {"segments_inf",                         1,  80,  80, 16, 2, true,  "segments:20,30",      kInf, 3.0},
    {"segments_1e9",                         1, 300, 300, 16, 2, true,  "segments:100,120,80", k1e9, 0.5},
    {"padding_inf",                          3,  30,  70, 16, 2, false, "padding",             kInf, 3.0, {70, 17, 0}},
    {"padding_1e9",                          3,  30,  70, 16, 2, false, "padding",             k1e9, 3.0, {70, 17, 0}},
    {"key_padding_inf",                      2,  25,  33,  8, 2, false, "none",                kInf, 3.0, {}, true},
    {"attn_mask_1e9",                        2,  25,  83,  8, 2, false, "none",                k1e9, 3.0, {}, false, true},
    {"attn_mask_inf",                        2,  71,  83,  8, 2, false, "none",                kInf, 1.0, {}, false, true},
    {"causal_padding_window_1e9",            2,  90,  90, 16, 4, true,  "causal+padding+window:20", k1e9, 3.0, {90, 41}},
    {"gqa_rope_alibi_softcap_sinks",         1, 100, 100, 16, 4, true,  "causal-window:9+sinks:2", kInf, 3.0, {}, false, false, 2, true, true, 3.0f},
    {"gqa_cross_rope_softcap_sinks_1e9",     2,  30,  75, 24, 6, false, "window:4+sinks:3",    k1e9, 3.0, {}, false, false, 3, true, false, 2.0f},
    {"mqa_alibi_padding",                    2,  80,  80, 16, 4, true,  "causal+padding",      kInf, 3.0, {80, 13}, false, false, 1, false, true},
    {"induction_causal",                     1, 120, 120, 16, 4, true,  "causal",              kInf, 3.0, {}, false, false, 0, false, false, 0.0f, 40},
    {"induction_none_1e9_B2",                2, 100, 100, 16, 2, true,  "none",                k1e9, 1.0, {}, false, false, 0, false, false, 0.0f, 30},
};

Run makeRun(const MetricsCase& c) {
  std::mt19937 rng(4321);
  Run run;
  run.inputs = testing::maskedCaseInputs(c, rng, c.qk_gain);
  AttentionInputs& in = run.inputs;
  if (c.repeat > 0) {  // "w7 w3 ..." with tokens [10, 10 + repeat) again at [L - repeat - 5, L - 5)
    std::uniform_int_distribution<int> word(0, 1000000);
    for (int64_t i = 0; i < c.L; ++i) in.query_tokens.push_back("w" + std::to_string(word(rng)));
    for (int64_t k = 0; k < c.repeat; ++k) in.query_tokens[c.L - c.repeat - 5 + k] = in.query_tokens[10 + k];
    in.key_tokens = in.query_tokens;
  }
  run.options = testing::maskedCaseOptions(c);
  run.tiled = true;
  return run;
}

void expectMetric(double got, double want, const std::string& where) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << where << ": " << got << ", want NaN";
  } else {
    EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want))) << where;
  }
}

class TiledMetricsTest : public ::testing::TestWithParam<MetricsCase> {};

TEST_P(TiledMetricsTest, HeadTableAndMaskCountsEqualFullPath) {
  const MetricsCase& c = GetParam();
  attnscope::Run run = makeRun(c);
  const ViewModel full = viewFromTrace(std::make_shared<const AttentionTrace>(runAttention(run.inputs, run.options)));
  const std::shared_ptr<const ViewModel> tiled = buildTiledView(run, {});
  ASSERT_TRUE(tiled && tiled->tiled);
  ASSERT_EQ(tiled->source, ViewSource::Tiled);

  const HeadTable want = headTableOf(full), got = headTableOf(*tiled);
  ASSERT_EQ(got.metrics.size(), want.metrics.size());
  ASSERT_EQ(got.layers, 1);
  ASSERT_EQ(got.H, c.H);
  ASSERT_EQ(got.B, c.B);
  // The real map's sizes (the fixed colour ranges read them), not the overview's.
  EXPECT_EQ(std::make_pair(got.L, got.S), std::make_pair(full.L, full.S));
  EXPECT_EQ(std::make_pair(want.L, want.S), std::make_pair(full.L, full.S));
  bool any_induction = false;
  for (size_t n = 0; n < want.metrics.size(); ++n) {
    const HeadMetrics &g = got.metrics[n], &w = want.metrics[n];
    ASSERT_EQ(g.layer, w.layer);
    ASSERT_EQ(g.head, w.head);
    ASSERT_EQ(g.batch, w.batch);
    EXPECT_EQ(g.rows, w.rows) << "head " << w.head << " batch " << w.batch;
    for (const MetricInfo& info : headMetricInfos())
      expectMetric(g.*info.field, w.*info.field,
                   std::string(info.name) + " of head " + std::to_string(w.head) + " batch " + std::to_string(w.batch));
    any_induction = any_induction || !std::isnan(w.induction);
  }
  EXPECT_EQ(any_induction, c.repeat > 0);
  ASSERT_EQ(got.clusters.size(), want.clusters.size());
  for (size_t b = 0; b < want.clusters.size(); ++b) {
    EXPECT_EQ(got.clusters[b].group, want.clusters[b].group) << "batch " << b;
    ASSERT_EQ(got.clusters[b].correlation.size(), want.clusters[b].correlation.size());
    for (size_t n = 0; n < want.clusters[b].correlation.size(); ++n)
      EXPECT_NEAR(got.clusters[b].correlation[n], want.clusters[b].correlation[n], 1e-6) << "batch " << b;
    // The table's orders (what the grid and the arrow keys follow) are the same too.
    for (int column = 0; column < headColumnCount(); ++column)
      EXPECT_EQ(headOrder(got, static_cast<int64_t>(b), {column, true}),
                headOrder(want, static_cast<int64_t>(b), {column, true}))
          << "sorted by " << headColumnName(column);
  }

  // The mask panel's counts: the real map's cells and rows, not the overview's blocks.
  ASSERT_EQ(tiled->allowed_counts.size(), static_cast<size_t>(c.B));
  EXPECT_EQ(tiled->allowed_counts, full.allowed_counts);
  EXPECT_EQ(tiled->fully_masked_counts, full.fully_masked_counts);
}

INSTANTIATE_TEST_SUITE_P(Cases, TiledMetricsTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MetricsCase>& info) { return std::string(info.param.name); });

// Moments of one row against float64 sums, over spans that start and end off the vector
// width, with masked keys (-inf scores, p = 0) inside.
TEST(RowMoments, EqualFloat64Sums) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t S = 203;
  std::vector<float> scores(S), probs(S);
  for (int64_t j = 0; j < S; ++j) scores[j] = j % 7 == 3 ? -INFINITY : normal(rng);
  const int64_t spans[][3] = {{0, S, 50}, {5, 190, 0}, {18, 19, 18}, {31, 101, 202}, {64, 128, 100}};
  for (const auto& span : spans) {
    const int64_t begin = span[0], end = span[1], i = span[2];
    float row_max = -INFINITY;
    for (int64_t j = begin; j < end; ++j) row_max = std::max(row_max, scores[j]);
    std::fill(probs.begin(), probs.end(), 0.0f);
    double sum = 0;
    for (int64_t j = begin; j < end; ++j) sum += std::exp(static_cast<double>(scores[j]) - row_max);
    for (int64_t j = begin; j < end; ++j) probs[j] = static_cast<float>(std::exp(static_cast<double>(scores[j]) - row_max) / sum);
    double mass = 0, logit = 0, distance = 0, max_p = 0;
    for (int64_t j = begin; j < end; ++j) {
      if (probs[j] == 0.0f) continue;
      mass += probs[j];
      logit += static_cast<double>(probs[j]) * static_cast<double>(scores[j] - row_max);
      distance += static_cast<double>(probs[j]) * static_cast<double>(std::llabs(i - j));
      max_p = std::max(max_p, static_cast<double>(probs[j]));
    }
    RowMoments m;
    addRowMoments(scores.data(), probs.data(), begin, end, row_max, i, m);
    const std::string where = "keys [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
    EXPECT_NEAR(m.mass, mass, 1e-12) << where;
    EXPECT_NEAR(m.weighted_logit, logit, 1e-10) << where;
    EXPECT_NEAR(m.distance, distance, 1e-10) << where;
    EXPECT_EQ(static_cast<double>(m.max_prob), max_p) << where;
  }
}

// Measures that do not fit the map are refused; an overview without measures counts the
// real map's allowed cells all the same.
TEST(TiledMeasures, BadMeasuresAreInputErrors) {
  std::mt19937 rng(3);
  const AttentionInputs in = testing::randomInputs({1, 20, 30, 8, 8, 8, 8}, rng, false, 0.0);
  AttentionOptions options;
  options.heads = 2;
  options.mask = MaskSpec::parse("causal-br");
  const TiledAttention t = prepareTiled(in, options);
  OverviewMeasures bad;
  bad.mean_rows = 21, bad.mean_cols = 5;
  EXPECT_THROW(computeOverview(t, 5, 5, {}, bad), InputError);
  bad.mean_rows = 4, bad.mean_cols = 0;
  EXPECT_THROW(computeOverview(t, 5, 5, {}, bad), InputError);
  OverviewMeasures keys;
  keys.induction_keys = {std::vector<int64_t>(20, 30)};  // key 30 is past S
  EXPECT_THROW(computeOverview(t, 5, 5, {}, keys), InputError);
  keys.induction_keys = {std::vector<int64_t>(19, 0)};
  EXPECT_THROW(computeOverview(t, 5, 5, {}, keys), InputError);
  const std::optional<Overview> plain = computeOverview(t, 5, 5);
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->metric_sums.empty());
  EXPECT_TRUE(plain->block_means.empty());
  // causal-br over L=20, S=30: row i may attend keys [0, i + 11).
  int64_t want = 0;
  for (int64_t i = 0; i < 20; ++i) want += i + 11;
  EXPECT_EQ(plain->allowed_cells, std::vector<int64_t>{want});
}

}  // namespace
}  // namespace attnscope
