// Head analytics (core/analysis/head_metrics.h): every metric on hand-computed small maps,
// repeated-segment detection and the induction score on hand cases, then every metric
// against a float64 reference written here with plain loops, on random maps of many
// shapes with every mask kind and fully masked rows (flagged and unflagged).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "analysis/head_metrics.h"
#include "attention/attention.h"
#include "view/view_model.h"

namespace attnscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void expectMetric(double expected, double actual, const std::string& what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << ": expected NaN, got " << actual;
  } else {
    EXPECT_NEAR(expected, actual, 1e-6) << what;
  }
}

// ---------------------------------------------------------------- hand cases

struct HandCase {
  const char* name;
  int64_t L, S;
  std::vector<float> map;             // [L, S]
  std::vector<uint8_t> fully_masked;  // [L] or empty
  // entropy, max, distance, sink, diag, prev, effective keys; rows
  double entropy, max_prob, distance, sink, diag, prev, effective;
  int64_t rows;
};

const double kLog3 = std::log2(3.0);

std::vector<HandCase> handCases() {
  return {
      {"two_rows", 2, 2, {1, 0, 0.5f, 0.5f}, {}, 0.5, 0.75, 0.25, 0.75, 0.75, 0.5, 1.5, 2},
      {"causal_uniform", 3, 3, {1, 0, 0, 0.5f, 0.5f, 0, 1 / 3.f, 1 / 3.f, 1 / 3.f}, {},
       (0 + 1 + kLog3) / 3, (1 + 0.5 + 1 / 3.) / 3, (0 + 0.5 + 1) / 3, (1 + 0.5 + 1 / 3.) / 3,
       (1 + 0.5 + 1 / 3.) / 3, (0.5 + 1 / 3.) / 2, 2, 3},
      // Row 1 fully masked (all zero, flagged): means over rows 0 and 2 only; prev over row 2.
      {"flagged_masked_row", 3, 3, {0, 1, 0, 0, 0, 0, 0, 0, 1}, {0, 1, 0},
       0, 1, (1 + 0) / 2., 0, (0 + 1) / 2., 0, 1, 2},
      // The same row unflagged but all zero: skipped all the same.
      {"zero_row_unflagged", 3, 3, {0, 1, 0, 0, 0, 0, 0, 0, 1}, {}, 0, 1, 0.5, 0, 0.5, 0, 1, 2},
      // A -1e9 fill leaves a flagged fully masked row uniform: still skipped.
      {"flagged_uniform_row", 2, 2, {1, 0, 0.5f, 0.5f}, {0, 1}, 0, 1, 0, 1, 1, kNaN, 1, 1},
      // Cross attention L=3 > S=2: row 2 has no diagonal key (0) and p[2, 1] is prev.
      {"cross_L3_S2", 3, 2, {0.25f, 0.75f, 1, 0, 0, 1}, {},
       (-(0.25 * std::log2(0.25) + 0.75 * std::log2(0.75)) + 0 + 0) / 3, (0.75 + 1 + 1) / 3,
       (0.75 + 1 + 1) / 3, (0.25 + 1 + 0) / 3, (0.25 + 0) / 3, (1 + 1) / 2.,
       (std::exp2(-(0.25 * std::log2(0.25) + 0.75 * std::log2(0.75))) + 1 + 1) / 3, 3},
      // L=1: no row i >= 1, so prev is undefined.
      {"single_row", 1, 4, {0.25f, 0.25f, 0.25f, 0.25f}, {}, 2, 0.25, 1.5, 0.25, 0.25, kNaN, 4, 1},
      // Every row masked: every metric undefined.
      {"all_masked", 2, 2, {0, 0, 0, 0}, {1, 1}, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 0},
  };
}

TEST(HeadMetrics, HandComputedCases) {
  for (const HandCase& c : handCases()) {
    SCOPED_TRACE(c.name);
    Tensor probs({1, 1, c.L, c.S});
    probs.data.assign(c.map.begin(), c.map.end());
    BoolTensor masked;
    if (!c.fully_masked.empty()) {
      masked = BoolTensor({1, c.L});
      masked.data = c.fully_masked;
    }
    const std::vector<HeadMetrics> rows = headMetrics(mapStackOf(probs, masked));
    ASSERT_EQ(rows.size(), 1u);
    const HeadMetrics& m = rows[0];
    expectMetric(c.entropy, m.entropy_bits, "entropy_bits");
    expectMetric(c.max_prob, m.max_prob, "max_prob");
    expectMetric(c.distance, m.mean_distance, "mean_distance");
    expectMetric(c.sink, m.sink_mass, "sink_mass");
    expectMetric(c.diag, m.diag_mass, "diag_mass");
    expectMetric(c.prev, m.prev_mass, "prev_mass");
    expectMetric(c.effective, m.effective_keys, "effective_keys");
    EXPECT_EQ(c.rows, m.rows);
    EXPECT_TRUE(std::isnan(m.induction)) << "no tokens, no induction score";
  }
}

TEST(HeadMetrics, RegistryNamesTheContractFieldsInOrder) {
  const std::vector<std::string> expected = {"entropy_bits", "max_prob", "mean_distance", "sink_mass",
                                             "diag_mass", "prev_mass", "effective_keys", "induction",
                                             "gen_sink_mass", "gen_recent_mass"};
  ASSERT_EQ(headMetricInfos().size(), expected.size());
  HeadMetrics m;
  m.entropy_bits = 1;
  m.max_prob = 2;
  m.mean_distance = 3;
  m.sink_mass = 4;
  m.diag_mass = 5;
  m.prev_mass = 6;
  m.effective_keys = 7;
  m.induction = 8;
  m.gen_sink_mass = 9;
  m.gen_recent_mass = 10;
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(expected[k], headMetricInfos()[k].name);
    EXPECT_EQ(static_cast<double>(k + 1), m.*headMetricInfos()[k].field) << expected[k];
    EXPECT_EQ(findHeadMetric(expected[k]), &headMetricInfos()[k]);
  }
  EXPECT_EQ(findHeadMetric("nope"), nullptr);
}

TEST(HeadMetrics, OrderByAnyColumnNaNLast) {
  std::vector<HeadMetrics> rows(5);
  const double sinks[] = {0.2, kNaN, 0.9, 0.2, 0.5};
  for (size_t k = 0; k < rows.size(); ++k) {
    rows[k].head = static_cast<int64_t>(k);
    rows[k].sink_mass = sinks[k];
  }
  const MetricInfo& sink = *findHeadMetric("sink_mass");
  EXPECT_EQ((std::vector<size_t>{2, 4, 0, 3, 1}), orderBy(rows, sink, true));
  EXPECT_EQ((std::vector<size_t>{0, 3, 4, 2, 1}), orderBy(rows, sink, false));  // ties keep order
}

// ---------------------------------------------------------------- repeated segments

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find(' ', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

TEST(RepeatedSegment, TableOfTokenSequences) {
  struct Case {
    const char* tokens;
    int64_t min_length;
    int64_t first, second, length;
  };
  const Case cases[] = {
      {"a b c a b c", 2, 0, 3, 3},
      {"a b a b a b", 2, 0, 2, 2},  // longer repeats would overlap
      {"x y z", 2, 0, 0, 0},
      {"the cat the dog", 2, 0, 0, 0},  // one repeated token is not a segment
      {"the cat the dog", 1, 0, 2, 1},
      {"a b c d a b c e a b c d", 2, 0, 8, 4},
      {"q a b r a b s a b", 2, 1, 4, 2},  // ties: the earliest pair
      {"a a", 1, 0, 1, 1},
      {"a", 1, 0, 0, 0},
      {"p q r s t p q r s t", 3, 0, 5, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tokens);
    const RepeatedSegment s = findRepeatedSegment(words(c.tokens), c.min_length);
    EXPECT_EQ(c.length, s.length);
    if (c.length > 0) {
      EXPECT_EQ(c.first, s.first);
      EXPECT_EQ(c.second, s.second);
    }
  }
  EXPECT_FALSE(findRepeatedSegment({}).found());
}

TEST(Induction, PerfectHalfAndMaskedRows) {
  // "A B C A B C": second copy at 3..5, targets 1, 2, 3.
  const int64_t L = 6;
  const std::vector<std::string> tokens = words("A B C A B C");
  Tensor probs({1, 2, L, L});
  for (int64_t i = 0; i < L; ++i) {
    probs.data[i * L + 0] = 1;  // head 0 default: everything on the sink
    probs.data[L * L + i * L + 0] = 1;
  }
  for (int64_t i = 3; i < L; ++i) {  // head 0: perfect induction head
    probs.data[i * L + 0] = 0;
    probs.data[i * L + (i - 3 + 1)] = 1;
  }
  for (int64_t i = 3; i < L; ++i) {  // head 1: half on the induction target
    probs.data[L * L + i * L + 0] = 0.5f;
    probs.data[L * L + i * L + (i - 3 + 1)] = 0.5f;
  }
  const std::vector<HeadMetrics> rows = headMetrics(mapStackOf(probs, {}, {tokens}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NEAR(1.0, rows[0].induction, 1e-12);
  EXPECT_NEAR(0.5, rows[1].induction, 1e-12);

  // Row 4 flagged as fully masked: the mean runs over rows 3 and 5.
  probs.data[4 * L + 2] = 0;
  BoolTensor masked({1, L});
  masked.data[4] = 1;
  EXPECT_NEAR(1.0, headMetrics(mapStackOf(probs, masked, {tokens}))[0].induction, 1e-12);

  // Every target row masked: undefined.
  const RepeatedSegment segment = findRepeatedSegment(tokens);
  const uint8_t all[L] = {1, 1, 1, 1, 1, 1};
  EXPECT_TRUE(std::isnan(inductionScore(probs.data.data(), L, L, segment, all)));
  // Tokens without a repeat: undefined.
  EXPECT_TRUE(std::isnan(headMetrics(mapStackOf(probs, {}, {words("a b c d e f")}))[0].induction));
}

TEST(MapStack, ShapesAndErrors) {
  Tensor five({3, 2, 4, 5, 6});
  const MapStack s = mapStackOf(five);
  EXPECT_EQ(3, s.layers);
  EXPECT_EQ(2, s.B);
  EXPECT_EQ(4, s.H);
  EXPECT_EQ(5, s.L);
  EXPECT_EQ(6, s.S);
  EXPECT_EQ(five.data.data() + ((2 * 2 + 1) * 4 + 3) * 30, s.map(2, 1, 3));
  EXPECT_EQ(nullptr, s.maskedRows(0));
  EXPECT_EQ(nullptr, s.tokensOf(0));
  EXPECT_THROW(mapStackOf(Tensor({2, 3, 4})), InputError);
  EXPECT_THROW(mapStackOf(five, BoolTensor({2, 4})), InputError);
  EXPECT_THROW(mapStackOf(five, {}, {{"a", "b"}}), InputError);
  EXPECT_THROW(mapStackOf(five, {}, std::vector<std::vector<std::string>>(3, std::vector<std::string>(5))),
               InputError);
}

// ---------------------------------------------------------------- float64 reference

struct ReferenceMetrics {
  double values[8];  // registry order
  int64_t rows;
};

// Plain loops straight from the definitions.
ReferenceMetrics referenceMetrics(const float* map, int64_t L, int64_t S, const uint8_t* masked,
                                  const std::vector<std::string>* tokens) {
  double sum[7] = {0, 0, 0, 0, 0, 0, 0};
  int64_t rows = 0, prev_rows = 0;
  std::vector<bool> counts(static_cast<size_t>(L), false);
  for (int64_t i = 0; i < L; ++i) {
    double total = 0;
    for (int64_t j = 0; j < S; ++j) total += map[i * S + j];
    if ((masked && masked[i]) || total == 0) continue;
    counts[i] = true;
    ++rows;
    double h = 0, mx = 0, dist = 0;
    for (int64_t j = 0; j < S; ++j) {
      const double p = map[i * S + j];
      h += p > 0 ? -p * std::log(p) / std::log(2.0) : 0.0;
      mx = p > mx ? p : mx;
      dist += p * std::fabs(static_cast<double>(i) - static_cast<double>(j));
    }
    sum[0] += h;
    sum[1] += mx;
    sum[2] += dist;
    sum[3] += map[i * S];
    sum[4] += i < S ? map[i * S + i] : 0.0;
    if (i >= 1) {
      ++prev_rows;
      sum[5] += i - 1 < S ? map[i * S + i - 1] : 0.0;
    }
    sum[6] += std::pow(2.0, h);
  }
  ReferenceMetrics r;
  r.rows = rows;
  for (int k = 0; k < 7; ++k) r.values[k] = rows ? sum[k] / rows : kNaN;
  r.values[5] = prev_rows && rows ? sum[5] / prev_rows : kNaN;
  // Induction: brute-force search of the longest non-overlapping repeat (earliest pair).
  r.values[7] = kNaN;
  if (tokens && L == S) {
    int64_t best_len = 0, best_a = 0, best_b = 0;
    for (int64_t a = 0; a < L; ++a)
      for (int64_t b = a + 1; b < L; ++b) {
        int64_t len = 0;
        while (b + len < L && a + len < b && (*tokens)[a + len] == (*tokens)[b + len]) ++len;
        if (len > best_len) {
          best_len = len;
          best_a = a;
          best_b = b;
        }
      }
    if (best_len >= 2) {
      double total = 0;
      int64_t n = 0;
      for (int64_t k = 0; k < best_len; ++k) {
        const int64_t i = best_b + k, j = best_a + k + 1;
        if (!counts[i] || j >= S) continue;
        total += map[i * S + j];
        ++n;
      }
      if (n) r.values[7] = total / n;
    }
  }
  return r;
}

struct RandomCase {
  const char* name;
  int64_t layers, B, H, L, S;
  const char* mask;   // "none", "causal", "window", "padding", "random"
  bool flag_rows;     // pass fully_masked (else masked rows are only all-zero)
  const char* vocab;  // tokens drawn from this many words ("" = no tokens)
  int64_t vocab_size;
  bool sharp;         // low temperature: peaked rows
};

TEST(HeadMetrics, AgainstFloat64ReferenceOnRandomMaps) {
  const RandomCase cases[] = {
      {"tiny", 1, 1, 1, 2, 2, "none", false, "", 0, false},
      {"causal_b2", 2, 2, 3, 7, 7, "causal", true, "w", 3, false},
      {"window_sharp", 3, 1, 4, 9, 9, "window", true, "w", 4, true},
      {"padding_zero_len", 1, 3, 2, 6, 8, "padding", true, "", 0, false},
      {"padding_unflagged", 2, 3, 2, 6, 6, "padding", false, "w", 2, false},
      {"random_mask", 2, 2, 5, 11, 11, "random", true, "w", 3, true},
      {"cross_L_gt_S", 1, 2, 3, 9, 4, "none", false, "", 0, false},
      {"cross_L_lt_S_causal", 2, 1, 2, 4, 10, "causal", true, "", 0, false},
      {"longer", 2, 2, 4, 40, 40, "causal", true, "w", 6, true},
  };
  for (const RandomCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(static_cast<uint32_t>(c.L * 131 + c.S * 7 + c.H));
    std::normal_distribution<float> normal(0.0f, c.sharp ? 4.0f : 1.0f);
    std::uniform_int_distribution<int> coin(0, 3);
    // allowed: [B, L, S]; padding: batch item b keeps keys < b * S / 2 (b = 0: all masked).
    std::vector<uint8_t> allowed(c.B * c.L * c.S, 1);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.L; ++i)
        for (int64_t j = 0; j < c.S; ++j) {
          const std::string m = c.mask;
          bool ok = true;
          if (m == "causal") ok = j <= i;
          if (m == "window") ok = std::llabs(i - j) <= 2;
          if (m == "padding") ok = j < b * c.S / 2;
          if (m == "random") ok = coin(rng) != 0 && i != 3;  // row 3 always fully masked
          allowed[(b * c.L + i) * c.S + j] = ok;
        }
    BoolTensor fully({c.B, c.L});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.L; ++i) {
        bool any = false;
        for (int64_t j = 0; j < c.S; ++j) any = any || allowed[(b * c.L + i) * c.S + j];
        fully.data[b * c.L + i] = !any;
      }
    Tensor probs({c.layers, c.B, c.H, c.L, c.S});
    for (int64_t layer = 0; layer < c.layers; ++layer)
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.H; ++h)
          for (int64_t i = 0; i < c.L; ++i) {
            float* row = probs.data.data() + (((layer * c.B + b) * c.H + h) * c.L + i) * c.S;
            double total = 0;
            std::vector<double> e(c.S, 0.0);
            for (int64_t j = 0; j < c.S; ++j) {
              const float logit = normal(rng);
              if (allowed[(b * c.L + i) * c.S + j]) total += e[j] = std::exp(static_cast<double>(logit));
            }
            for (int64_t j = 0; j < c.S; ++j) row[j] = total > 0 ? static_cast<float>(e[j] / total) : 0.0f;
          }
    std::vector<std::vector<std::string>> tokens;
    if (c.vocab_size > 0) {
      std::uniform_int_distribution<int> word(0, static_cast<int>(c.vocab_size) - 1);
      for (int64_t b = 0; b < c.B; ++b) {
        std::vector<std::string> line;
        for (int64_t i = 0; i < c.L; ++i) line.push_back(c.vocab + std::to_string(word(rng)));
        tokens.push_back(line);
      }
    }
    const MapStack stack = mapStackOf(probs, c.flag_rows ? fully : BoolTensor{}, tokens);
    const std::vector<HeadMetrics> rows = headMetrics(stack);
    ASSERT_EQ(rows.size(), static_cast<size_t>(c.layers * c.H * c.B));
    size_t n = 0;
    for (int64_t layer = 0; layer < c.layers; ++layer)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t b = 0; b < c.B; ++b, ++n) {
          const HeadMetrics& m = rows[n];
          ASSERT_EQ(layer, m.layer);
          ASSERT_EQ(h, m.head);
          ASSERT_EQ(b, m.batch);
          const float* map = probs.data.data() + ((layer * c.B + b) * c.H + h) * c.L * c.S;
          const ReferenceMetrics r = referenceMetrics(map, c.L, c.S, c.flag_rows ? &fully.data[b * c.L] : nullptr,
                                                      tokens.empty() ? nullptr : &tokens[b]);
          EXPECT_EQ(r.rows, m.rows);
          for (size_t k = 0; k < headMetricInfos().size(); ++k) {
            const double actual = m.*headMetricInfos()[k].field;
            if (isGenerationMetric(headMetricInfos()[k])) {  // maps that are no generation: none
              EXPECT_TRUE(std::isnan(actual)) << headMetricInfos()[k].name;
            } else if (std::isnan(r.values[k])) {
              EXPECT_TRUE(std::isnan(actual)) << headMetricInfos()[k].name << " layer " << layer << " head " << h;
            } else {
              EXPECT_NEAR(r.values[k], actual, 1e-9 * (1 + std::fabs(r.values[k])))
                  << headMetricInfos()[k].name << " layer " << layer << " head " << h << " batch " << b;
            }
          }
        }
  }
}

// Seeded self-attention inputs [B, L, D] with weights [D, D]; batch item 1 has no valid
// key, so every one of its rows is fully masked once padding is on.
AttentionInputs selfAttentionInputs(int64_t B, int64_t L, int64_t D, uint32_t seed) {
  AttentionInputs in;
  in.query = Tensor({B, L, D});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (float& v : in.query.data) v = normal(rng);
  in.key = in.value = in.query;
  in.w_q = in.w_k = in.w_v = in.w_o = Tensor({D, D});
  for (Tensor* w : {&in.w_q, &in.w_k, &in.w_v, &in.w_o})
    for (float& v : w->data) v = 0.3f * normal(rng);
  in.valid_lens = {L, 0};
  return in;
}

// The metrics of a real trace: probs and fully_masked straight from runAttention.
TEST(HeadMetrics, FromAnAttentionTrace) {
  const int64_t L = 5;
  const AttentionInputs in = selfAttentionInputs(2, L, 8, 7);
  AttentionOptions options;
  options.heads = 2;
  options.mask.causal = true;
  options.mask.padding = true;
  const AttentionTrace trace = runAttention(in, options);
  const std::vector<HeadMetrics> rows = headMetrics(mapStackOf(trace.probs, trace.fully_masked));
  ASSERT_EQ(rows.size(), 4u);
  for (const HeadMetrics& m : rows) {
    SCOPED_TRACE("head " + std::to_string(m.head) + " batch " + std::to_string(m.batch));
    const float* map = trace.probs.data.data() + (m.batch * 2 + m.head) * L * L;
    const ReferenceMetrics r = referenceMetrics(map, L, L, &trace.fully_masked.data[m.batch * L], nullptr);
    EXPECT_EQ(m.batch == 0 ? L : 0, m.rows);
    EXPECT_EQ(r.rows, m.rows);
    for (size_t k = 0; k < headMetricInfos().size(); ++k) {
      const double actual = m.*headMetricInfos()[k].field;
      if (headMetricInfos()[k].field == &HeadMetrics::induction || isGenerationMetric(headMetricInfos()[k])) {
        EXPECT_TRUE(std::isnan(actual)) << headMetricInfos()[k].name;  // no tokens, no generation
        continue;
      }
      if (m.batch == 1) EXPECT_TRUE(std::isnan(actual)) << headMetricInfos()[k].name;
      else EXPECT_NEAR(r.values[k], actual, 1e-9) << headMetricInfos()[k].name;
    }
  }
}

// The view model's stack (what the app and analyze read) gives the same rows as the
// trace's own tensors: probabilities, fully masked rows from the mask, tokens.
TEST(HeadMetrics, ViewModelStackMatchesTheTrace) {
  AttentionInputs in = selfAttentionInputs(2, 6, 8, 5);
  in.query_tokens = words("a b c a b c");
  in.key_tokens = in.query_tokens;
  AttentionOptions options;
  options.heads = 2;
  options.mask.padding = true;
  options.fill = MaskFill::NegBillion;  // fully masked rows come out uniform, not zero
  const auto trace = std::make_shared<const AttentionTrace>(runAttention(in, options));
  const ViewModel view = viewFromTrace(trace);
  const MapStack from_view = mapStackOf(view);
  EXPECT_EQ(std::vector<uint8_t>(trace->fully_masked.data), from_view.fully_masked);
  const std::vector<HeadMetrics> a = headMetrics(from_view);
  const std::vector<HeadMetrics> b = headMetrics(mapStackOf(trace->probs, trace->fully_masked, {in.query_tokens}));
  ASSERT_EQ(a.size(), b.size());
  for (size_t n = 0; n < a.size(); ++n) {
    EXPECT_EQ(a[n].rows, b[n].rows);
    for (const MetricInfo& info : headMetricInfos()) {
      const double x = a[n].*info.field, y = b[n].*info.field;
      EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << info.name;
    }
  }
  EXPECT_FALSE(std::isnan(a[0].induction));  // "a b c" repeats
  EXPECT_TRUE(std::isnan(a[1].entropy_bits));  // batch item 1: every row masked
}

}  // namespace
}  // namespace attnscope
