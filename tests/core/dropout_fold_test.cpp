// Dropout statistics and determinism; seed 004's folded-heads layout [B*H, T, d].
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "attention/attention.h"
#include "reference.h"

namespace attnscope {
namespace {

AttentionInputs randomInputs(int64_t B, int64_t L, int64_t S, int64_t Din, int64_t D, uint32_t seed,
                             bool bias = true) {
  std::mt19937 rng(seed);
  return testing::randomInputs({B, L, S, Din, Din, Din, D}, rng, /*self=*/false, bias ? 0.2 : 0.0);
}

struct DropoutCase {
  float p;
  uint64_t seed;
};

class Dropout : public ::testing::TestWithParam<DropoutCase> {};

TEST_P(Dropout, KeepRateScaleAndDeterminism) {
  const float p = GetParam().p;
  const AttentionInputs in = randomInputs(2, 64, 48, 16, 16, 11);
  AttentionOptions o;
  o.heads = 4;
  o.dropout = p;
  o.train = true;
  o.seed = GetParam().seed;
  const AttentionTrace t = runAttention(in, o);
  ASSERT_TRUE(t.dropout_applied);

  // probs are > 0 everywhere (no mask), so a zero after dropout is a dropped element.
  int64_t kept = 0;
  const int64_t total = static_cast<int64_t>(t.probs.data.size());
  for (int64_t n = 0; n < total; ++n) {
    ASSERT_GT(t.probs.data[n], 0.0f);
    if (t.probs_dropped.data[n] != 0.0f) {
      ++kept;
      ASSERT_NEAR(t.probs_dropped.data[n], t.probs.data[n] / (1.0f - p), 1e-6 * t.probs_dropped.data[n]);
    }
  }
  // 24576 Bernoulli draws: standard deviation of the rate <= 0.0032; allow 5 sigma.
  const double rate = double(kept) / double(total);
  EXPECT_NEAR(rate, 1.0 - p, 0.016) << "keep rate";

  // Same seed: identical (threads do not matter); other seed: a different pattern.
  const AttentionTrace again = runAttention(in, o);
  EXPECT_EQ(again.probs_dropped.data, t.probs_dropped.data);
  EXPECT_EQ(again.output.data, t.output.data);
  AttentionOptions other = o;
  other.seed = o.seed + 1;
  EXPECT_NE(runAttention(in, other).probs_dropped.data, t.probs_dropped.data);

  // Context and output use the dropped probabilities (checked in float64).
  const testing::Reference r = testing::referenceAttention(in, o, &t.probs_dropped.data);
  for (size_t n = 0; n < r.output.size(); ++n) ASSERT_NEAR(t.output.data[n], r.output[n], testing::tolerance(r.output[n]));
  for (size_t n = 0; n < r.probs.size(); ++n) ASSERT_NEAR(t.probs.data[n], r.probs[n], 1e-5);

  // Eval mode: identical to no dropout at all.
  AttentionOptions eval = o;
  eval.train = false;
  AttentionOptions none = o;
  none.dropout = 0.0f;
  const AttentionTrace te = runAttention(in, eval), tn = runAttention(in, none);
  EXPECT_FALSE(te.dropout_applied);
  EXPECT_FALSE(tn.dropout_applied);
  EXPECT_TRUE(te.probs_dropped.empty());
  EXPECT_EQ(te.probsAfterDropout().data, te.probs.data);
  EXPECT_EQ(te.output.data, tn.output.data);
  EXPECT_EQ(te.probs.data, t.probs.data);
}

INSTANTIATE_TEST_SUITE_P(Rates, Dropout,
                         ::testing::Values(DropoutCase{0.1f, 0}, DropoutCase{0.3f, 42}, DropoutCase{0.5f, 7},
                                           DropoutCase{0.9f, 123456789}));

TEST(Dropout, MaskedProbabilitiesStayZero) {
  const AttentionInputs in = randomInputs(1, 16, 16, 8, 8, 3);
  AttentionOptions o;
  o.heads = 2;
  o.mask = MaskSpec::parse("causal");
  o.dropout = 0.5f;
  o.train = true;
  const AttentionTrace t = runAttention(in, o);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t j = i + 1; j < 16; ++j) ASSERT_EQ(t.probs_dropped.data[(h * 16 + i) * 16 + j], 0.0f);
}

TEST(FoldedLayout, FoldUnfoldRoundTrip) {
  std::mt19937 rng(5);
  for (const auto& [B, T, D, H] : std::vector<std::array<int64_t, 4>>{{2, 4, 100, 5}, {1, 7, 15, 3}, {3, 1, 4, 4}, {2, 5, 6, 1}}) {
    const Tensor x = testing::randomNormal({B, T, D}, rng);
    const Tensor folded = foldHeads(x, H);
    ASSERT_EQ(folded.shape, (Shape{B * H, T, D / H}));
    // transpose_qkv: folded[b*H + h, t, k] = x[b, t, h*d + k]
    const int64_t d = D / H;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t k = 0; k < d; ++k)
            ASSERT_EQ(folded.data[((b * H + h) * T + t) * d + k], x.data[(b * T + t) * D + h * d + k]);
    const Tensor back = unfoldHeads(folded, H);
    EXPECT_EQ(back.shape, x.shape);
    EXPECT_EQ(back.data, x.data);
  }
  EXPECT_THROW(foldHeads(Tensor({2, 3, 10}), 3), InputError);
  EXPECT_THROW(unfoldHeads(Tensor({5, 3, 2}), 2), InputError);
}

TEST(FoldedLayout, RepeatInterleave) {
  EXPECT_EQ(repeatInterleave({3, 2}, 5), (std::vector<int64_t>{3, 3, 3, 3, 3, 2, 2, 2, 2, 2}));
  EXPECT_EQ(repeatInterleave({4}, 1), (std::vector<int64_t>{4}));
  EXPECT_TRUE(repeatInterleave({}, 3).empty());
}

// Seed 004: B=2, L=4, S=6, D=100, H=5, valid_lens=[3,2], bias=False.
TEST(FoldedLayout, Seed004ShapesAndSameNumbersInBothLayouts) {
  const AttentionInputs base = randomInputs(2, 4, 6, 100, 100, 4, /*bias=*/false);
  AttentionInputs in = base;
  in.valid_lens = {3, 2};
  AttentionOptions o;
  o.heads = 5;
  o.mask = MaskSpec::parse("padding");
  const AttentionTrace t = runAttention(in, o);
  EXPECT_EQ(t.output.shape, (Shape{2, 4, 100}));

  const Tensor q = foldHeads(t.q_proj, 5), k = foldHeads(t.k_proj, 5), v = foldHeads(t.v_proj, 5);
  EXPECT_EQ(q.shape, (Shape{10, 4, 20}));  // transpose_qkv(queries)
  EXPECT_EQ(k.shape, (Shape{10, 6, 20}));  // transpose_qkv(keys)
  EXPECT_EQ(v.shape, (Shape{10, 6, 20}));
  const std::vector<int64_t> lens = repeatInterleave(in.valid_lens, 5);
  EXPECT_EQ(lens.size(), 10u);

  // The [B, H, ...] trace relabelled as [B*H, ...] is the folded layout, bit for bit.
  EXPECT_EQ(mergeBatchHeads(t.q).shape, q.shape);
  EXPECT_EQ(mergeBatchHeads(t.q).data, q.data);
  EXPECT_EQ(mergeBatchHeads(t.k).data, k.data);
  EXPECT_EQ(mergeBatchHeads(t.v).data, v.data);
  EXPECT_EQ(mergeBatchHeads(t.probs).shape, (Shape{10, 4, 6}));
  const Tensor ctx = mergeBatchHeads(t.context_heads);
  EXPECT_EQ(ctx.shape, (Shape{10, 4, 20}));           // attention output before transpose_output
  EXPECT_EQ(unfoldHeads(ctx, 5).shape, (Shape{2, 4, 100}));
  EXPECT_EQ(unfoldHeads(ctx, 5).data, t.context.data);  // transpose_output

  // d2l's DotProductAttention on the folded tensors, with masked_softmax by the repeated
  // valid lengths, computed here in float64: same numbers as the trace.
  for (int64_t bh = 0; bh < 10; ++bh)
    for (int64_t i = 0; i < 4; ++i) {
      double row[6], mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < 6; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < 20; ++c) dot += double(q.data[(bh * 4 + i) * 20 + c]) * k.data[(bh * 6 + j) * 20 + c];
        row[j] = j < lens[bh] ? dot / std::sqrt(20.0) : -std::numeric_limits<double>::infinity();
        mx = std::max(mx, row[j]);
      }
      for (double& x : row) sum += x = std::exp(x - mx);
      for (int64_t j = 0; j < 6; ++j) {
        ASSERT_NEAR(t.probs.data[(bh * 4 + i) * 6 + j], row[j] / sum, 1e-6);
        if (j >= lens[bh]) {
          ASSERT_EQ(t.probs.data[(bh * 4 + i) * 6 + j], 0.0f);
        }
      }
      for (int64_t c = 0; c < 20; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < 6; ++j) acc += row[j] / sum * v.data[(bh * 6 + j) * 20 + c];
        ASSERT_NEAR(ctx.data[(bh * 4 + i) * 20 + c], acc, 1e-5);
      }
    }

  // And the whole thing against the float64 reference.
  const testing::Reference r = testing::referenceAttention(in, o);
  for (size_t n = 0; n < r.output.size(); ++n) ASSERT_NEAR(t.output.data[n], r.output[n], 1e-5);
}

TEST(FoldedLayout, MergeBatchHeadsNeedsTwoAxes) {
  EXPECT_THROW(mergeBatchHeads(Tensor({4})), InputError);
  const Tensor x({2, 3, 4, 5}, 1.0f);
  EXPECT_EQ(mergeBatchHeads(x).shape, (Shape{6, 4, 5}));
}

}  // namespace
}  // namespace attnscope
