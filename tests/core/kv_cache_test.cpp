// The KV-cache stepper against the full computation: for every step t, the new row and the
// output row equal row t of runAttention's causal map (1e-5), with and without eviction;
// the cache keeps k + W entries under sinks + window and names the evicted keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>

#include "attention/kv_cache.h"
#include "reference.h"

namespace attnscope {
namespace {

struct StepCase {
  const char* name;
  int64_t B, L, D, H, G;
  const char* mask;
  bool rope = false;
  bool alibi = false;
  float softcap = 0.0f;
  MaskFill fill = MaskFill::NegInf;
  std::vector<int64_t> valid_lens = {};
};

std::ostream& operator<<(std::ostream& os, const StepCase& c) { return os << c.name; }

AttentionInputs makeInputs(const StepCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(c.L * 13 + c.H));
  AttentionInputs in = testing::randomInputs({c.B, c.L, c.L, c.D, c.D, c.D, c.D}, rng, true, 0.2, 1.5);
  const int64_t rows = c.G * (c.D / c.H);
  testing::keepKeyValueRows(in, rows);
  in.valid_lens = c.valid_lens;
  return in;
}

AttentionOptions makeOptions(const StepCase& c) {
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse(c.mask);
  o.rope = c.rope;
  o.alibi = c.alibi;
  if (c.softcap > 0.0f) o.softcap = c.softcap;
  o.fill = c.fill;
  return o;
}

//  name                    B  L   D   H  G  mask
const StepCase kCases[] = {
    {"causal",              1, 9,  16, 4, 4, "causal"},
    {"causal_br_mqa",       2, 7,  16, 4, 1, "causal-br"},
    {"llama_gqa_rope",      2, 12, 32, 8, 2, "causal", true},
    {"window_no_sinks",     1, 11, 16, 2, 2, "causal-window:3"},
    {"sinks_window",        2, 16, 16, 4, 2, "causal-window:4+sinks:2", true},
    {"sinks_window_alibi",  1, 14, 24, 6, 3, "causal-window:3+sinks:1", false, true, 3.0f},
    {"sinks_padding_1e9",   2, 10, 16, 2, 1, "causal-window:2+sinks:3+padding", true, true, 0.0f, MaskFill::NegBillion, {10, 6}},
    {"window_0_sinks_0",    1, 6,  8,  2, 2, "causal-window:0+sinks:0"},
};

class StepperCase : public ::testing::TestWithParam<StepCase> {};

TEST_P(StepperCase, EveryStepRowEqualsTheFullCausalRow) {
  const StepCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  const AttentionOptions o = makeOptions(c);
  const AttentionTrace full = runAttention(in, o);
  const KvCacheRun run = decodeWithKvCache(in, o);
  const int64_t L = c.L, H = c.H, D = c.D;
  ASSERT_EQ(run.steps.size(), static_cast<size_t>(L));
  ASSERT_EQ(run.G, c.G);
  for (int64_t t = 0; t < L; ++t) {
    const DecodeStep& step = run.steps[t];
    ASSERT_EQ(step.position, t);
    for (int64_t b = 0; b < c.B; ++b) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < L; ++j)
          ASSERT_NEAR(step.row_probs.data[(b * H + h) * L + j], full.probs.data[((b * H + h) * L + t) * L + j], 1e-5)
              << "step " << t << " b " << b << " h " << h << " key " << j;
      for (int64_t k = 0; k < D; ++k)
        ASSERT_NEAR(step.output.data[b * D + k], full.output.data[(b * L + t) * D + k], 1e-5)
            << "step " << t << " output " << k;
    }
  }
}

TEST_P(StepperCase, CacheHoldsSinksPlusWindowAndNamesEvictedKeys) {
  const StepCase& c = GetParam();
  const AttentionOptions o = makeOptions(c);
  const KvCacheRun run = decodeWithKvCache(makeInputs(c), o);
  const int64_t W = o.mask.causal_window, k = std::max<int64_t>(o.mask.sinks, 0);
  EXPECT_EQ(run.capacity, W >= 0 ? k + W : -1);
  for (int64_t t = 0; t < c.L; ++t) {
    const DecodeStep& step = run.steps[t];
    std::vector<int64_t> expected_evicted, expected_cached;
    for (int64_t j = 0; j <= t; ++j) {
      const bool gone_before = W >= 0 && j >= k && j < t - W;  // evicted at an earlier step
      if (!gone_before) expected_cached.push_back(j);
      if (W >= 0 && j >= k && j < t + 1 - W) expected_evicted.push_back(j);
    }
    EXPECT_EQ(step.cached, expected_cached) << "step " << t;
    EXPECT_EQ(step.evicted, expected_evicted) << "step " << t;
    const int64_t kept = static_cast<int64_t>(t + 1 - expected_evicted.size());
    EXPECT_EQ(step.entries_after, kept) << "step " << t;
    if (W >= 0) {
      EXPECT_LE(step.entries_after, k + W);
      if (t + 1 >= k + W) {
        EXPECT_EQ(step.entries_after, k + W) << "step " << t;
      }
    }
    const uint64_t d = static_cast<uint64_t>(c.D / c.H);
    EXPECT_EQ(run.bytesPerGroup(kept), 2ull * c.B * kept * d * 4);
    EXPECT_EQ(run.bytesPerLayer(kept), run.bytesPerGroup(kept) * c.G);
  }
}

TEST_P(StepperCase, RowDifferenceNamesTheLargestGap) {
  const StepCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  const AttentionOptions o = makeOptions(c);
  const AttentionTrace full = runAttention(in, o);
  KvCacheRun run = decodeWithKvCache(in, o);
  std::vector<float> diff = stepRowDifference(run, full);
  ASSERT_EQ(diff.size(), static_cast<size_t>(c.L));
  for (float d : diff) EXPECT_LE(d, 1e-5f);
  // A changed cell in step 2's row shows up as that step's difference, nowhere else.
  run.steps[2].row_probs.data[c.L - 1] += 0.25f;
  diff = stepRowDifference(run, full);
  EXPECT_NEAR(diff[2], 0.25f, 1e-5f);
  EXPECT_LE(diff[1], 1e-5f);
  run.steps.pop_back();
  EXPECT_TRUE(stepRowDifference(run, full).empty());
}

INSTANTIATE_TEST_SUITE_P(Table, StepperCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<StepCase>& info) { return std::string(info.param.name); });

TEST(Stepper, RefusesWhatADecoderCannotRun) {
  const StepCase c{"bad", 1, 5, 8, 2, 2, "causal"};
  const AttentionInputs in = makeInputs(c);
  AttentionOptions o = makeOptions(c);
  o.mask = MaskSpec::parse("window:2");
  EXPECT_THROW(decodeWithKvCache(in, o), InputError);
  o = makeOptions(c);
  o.mistake = Mistake::NoScaling;
  EXPECT_THROW(decodeWithKvCache(in, o), InputError);
  AttentionInputs cross = in;
  cross.key = cross.value = Tensor({1, 4, 8});
  EXPECT_THROW(decodeWithKvCache(cross, makeOptions(c)), InputError);
}

// A model's runs under a cache window (generation, issue 21): the stepper's mask terms on a
// causal layer; a model's own sliding window still applies (the smaller window), the sinks
// stay visible through it; off leaves the layer's mask as it was.
TEST(Stepper, CacheWindowOnALayersMask) {
  struct Row {
    const char* layer;
    CacheWindow cache;
    const char* want;
  };
  for (const Row& row : {Row{"causal", {}, "causal"}, Row{"causal+causal-window:4", {}, "causal+causal-window:4"},
                         Row{"causal", {8, 2}, "causal+causal-window:8+sinks:2"},
                         Row{"causal+causal-window:4", {8, 2}, "causal+causal-window:4+sinks:2"},
                         Row{"causal+causal-window:9", {3, 0}, "causal+causal-window:3"},
                         Row{"causal", {0, 1}, "causal+causal-window:0+sinks:1"}}) {
    EXPECT_EQ(withCacheWindow(MaskSpec::parse(row.layer), row.cache).toString(), row.want) << row.layer;
  }
}

}  // namespace
}  // namespace attnscope
