// The model runtime's cached attention (attention/cached_rows.h) and the sampler
// (model/generate.h): attendRows from position 0 equals runAttention within 1e-5 (GQA, RoPE,
// causal window, soft-cap); a run continued from a grid position equals a fresh run of the
// final length bit for bit, growing and shrinking; generation's one-row decode steps give the
// full run's rows within 1e-5 (probs) and 1e-4 (outputs), their cache evicting what a causal
// window (with sinks) hides for good; the sampler's seeded draws repeat, top-k 1
// and a tiny top-p are greedy, and its frequencies follow the softmax.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "attention/cached_rows.h"
#include "model/generate.h"
#include "reference.h"

namespace attnscope {
namespace {

struct RowsCase {
  const char* name;
  int64_t L, D, H, G;
  bool rope;
  int64_t window;  // -1 = full causal
  float softcap;
  int64_t sinks = -1;  // with a window: the first keys every row sees
};

std::ostream& operator<<(std::ostream& os, const RowsCase& c) { return os << c.name; }

class CachedRows : public ::testing::TestWithParam<RowsCase> {
 protected:
  void SetUp() override {
    const RowsCase& c = GetParam();
    std::mt19937 rng(static_cast<uint32_t>(c.L + c.H));
    in_ = testing::randomInputs({1, c.L, c.L, c.D, c.D, c.D, c.D}, rng, true, 0.2, 1.5);
    testing::keepKeyValueRows(in_, c.G * (c.D / c.H));
    o_.heads = c.H;
    o_.kv_heads = c.G;
    o_.mask.causal = true;
    o_.mask.causal_window = c.window;
    o_.mask.sinks = c.sinks;
    o_.rope = c.rope;
    if (c.softcap > 0) o_.softcap = c.softcap;
    o_.keep_raw_scores = false;
  }
  // Runs rows [start, L) of the first L positions into t; returns the output rows.
  std::vector<float> run(AttentionTrace& t, int64_t start, int64_t L) {
    const int64_t D = GetParam().D;
    std::vector<float> out((L - start) * D);
    attendRows(t, projectionsOf(in_), o_, &in_.query.data[start * D], start, L, std::vector<std::string>(L, "x"), out.data());
    return out;
  }
  AttentionInputs in_;
  AttentionOptions o_;
};

bool sameBits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

TEST_P(CachedRows, FullRunEqualsRunAttention) {
  const RowsCase& c = GetParam();
  AttentionTrace t;
  run(t, 0, c.L);
  const AttentionTrace want = runAttention(in_, o_);
  ASSERT_EQ(t.probs.shape, want.probs.shape);
  for (size_t n = 0; n < want.probs.data.size(); ++n) ASSERT_NEAR(t.probs.data[n], want.probs.data[n], 1e-5) << n;
  for (size_t n = 0; n < want.output.data.size(); ++n) ASSERT_NEAR(t.output.data[n], want.output.data[n], 1e-4) << n;
  EXPECT_EQ(t.G, c.G);
  EXPECT_EQ(t.k.shape, (Shape{1, c.G, c.L, c.D / c.H}));  // K/V stored once per group
}

TEST_P(CachedRows, ContinuedRunsEqualFreshRunsBitForBit) {
  const RowsCase& c = GetParam();
  AttentionTrace cached;
  run(cached, 0, c.L / 2);
  for (int64_t L : {c.L / 2 + 1, c.L - 3, c.L, c.L / 3}) {  // grow, grow across blocks, shrink
    const int64_t start = std::min(L, cached.L) - 1;  // any position: rows from it only
    run(cached, start, L);
    AttentionTrace fresh;
    run(fresh, 0, L);
    EXPECT_TRUE(sameBits(cached.probs, fresh.probs)) << "L=" << L;
    EXPECT_TRUE(sameBits(cached.scores, fresh.scores)) << "L=" << L;
    EXPECT_TRUE(sameBits(cached.output, fresh.output)) << "L=" << L;
    EXPECT_TRUE(sameBits(cached.k, fresh.k)) << "L=" << L;
  }
}

TEST_P(CachedRows, DecodedRowsEqualTheFullRunsRows) {
  const RowsCase& c = GetParam();
  const int64_t prompt = c.L / 2, D = c.D;
  AttentionTrace t, full;
  run(t, 0, prompt);
  run(full, 0, c.L);
  DecodeCache cache;
  startDecode(t, o_.mask, cache);
  for (int64_t p = prompt; p < c.L; ++p) {  // generation: one position at a time
    const int64_t S = p + 1;
    std::vector<float> probs(c.H * S), out(D);
    decodeRow(cache, projectionsOf(in_), o_, &in_.query.data[p * D], probs.data(), out.data());
    ASSERT_EQ(cache.L, S);
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t j = 0; j < c.L; ++j) {
        const float want = full.probs.data[(h * c.L + p) * c.L + j];
        ASSERT_NEAR(j < S ? probs[h * S + j] : 0.0f, want, 1e-5) << "p=" << p << " h=" << h << " j=" << j;
      }
    for (int64_t n = 0; n < D; ++n) ASSERT_NEAR(out[n], full.output.data[p * D + n], 1e-4) << "p=" << p;
  }
  if (c.window < 0) {
    EXPECT_EQ(cache.entries(), c.L);  // every position stays: the capacity grew past the prompt's
  } else {
    EXPECT_EQ(cache.entries(), std::max<int64_t>(c.sinks, 0) + c.window + 1);  // the rest evicted
    EXPECT_EQ(cache.capacity, cache.entries());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CachedRows,
                         ::testing::Values(RowsCase{"mha", 150, 32, 4, 4, false, -1, 0.0f},
                                           RowsCase{"gqa_rope", 140, 32, 4, 2, true, -1, 0.0f},
                                           RowsCase{"window_mqa_rope", 200, 48, 6, 1, true, 5, 0.0f},
                                           RowsCase{"softcap_window", 130, 32, 2, 2, false, 70, 30.0f},
                                           RowsCase{"sinks_window_gqa_rope", 170, 32, 4, 2, true, 9, 0.0f, 3},
                                           // maps of over a million floats: they move in place on every thread
                                           RowsCase{"mha_long", 560, 32, 4, 4, false, -1, 0.0f}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TokenSampler, SeededDrawsRepeatAndFollowTheSoftmax) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  SamplingSettings s;
  s.greedy = false;
  s.seed = 11;
  TokenSampler a(s), b(s);
  std::vector<int64_t> counts(5, 0);
  const int draws = 20000;
  for (int n = 0; n < draws; ++n) {
    const int64_t id = a.pick(logits.data(), 5);
    ASSERT_EQ(id, b.pick(logits.data(), 5));
    ++counts[id];
  }
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  for (int v = 0; v < 5; ++v) EXPECT_NEAR(counts[v] / static_cast<double>(draws), std::exp(logits[v]) / sum, 0.015) << v;
}

TEST(TokenSampler, TopKOneAndTinyTopPAreGreedy) {
  const std::vector<float> logits = {0.3f, 2.5f, 2.4f, -1.0f};
  for (auto [k, p] : {std::pair<int64_t, double>{1, 1.0}, {0, 1e-9}}) {
    SamplingSettings s;
    s.greedy = false;
    s.temperature = 3.0;
    s.top_k = k;
    s.top_p = p;
    TokenSampler sampler(s);
    for (int n = 0; n < 50; ++n) EXPECT_EQ(sampler.pick(logits.data(), 4), 1);
  }
  SamplingSettings greedy;
  EXPECT_EQ(TokenSampler(greedy).pick(logits.data(), 4), 1);
}

TEST(TokenSampler, TopKTwoNeverPicksTheRest) {
  const std::vector<float> logits = {0.3f, 2.5f, 2.4f, -1.0f};
  SamplingSettings s;
  s.greedy = false;
  s.temperature = 10.0;
  s.top_k = 2;
  s.seed = 3;
  TokenSampler sampler(s);
  std::vector<int> seen(4, 0);
  for (int n = 0; n < 400; ++n) ++seen[sampler.pick(logits.data(), 4)];
  EXPECT_EQ(seen[0] + seen[3], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
}

}  // namespace
}  // namespace attnscope
