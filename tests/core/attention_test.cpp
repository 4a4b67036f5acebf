// Table-driven attention cases (test-backend-ops style): each row builds seeded inputs,
// runs runAttention and compares every stage with the float64 reference in reference.h.
// Tolerances: scores, probabilities, context and outputs within 1e-5 absolute (relative
// for values larger than 1); masked probabilities exactly 0; layout stages exact.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>

#include "attention/attention.h"
#include "reference.h"

namespace attnscope {
namespace {

using testing::referenceAttention;
using testing::tolerance;

enum class AttnMaskKind { None, Mask2D, Mask3D };

struct Case {
  const char* name;
  int64_t B, L, S, Dq, Dk, Dv, D, H;
  bool self;  // key = value = query (needs L == S and Dq == Dk == Dv)
  bool bias;
  const char* mask;
  MaskFill fill = MaskFill::NegInf;
  ScaleMode scale = ScaleMode::InvSqrtD;
  float custom_scale = 1.0f;
  std::vector<int64_t> valid_lens = {};
  bool key_padding = false;
  AttnMaskKind attn_mask = AttnMaskKind::None;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

AttentionInputs makeInputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionInputs in =
      testing::randomInputs({c.B, c.L, c.S, c.Dq, c.Dk, c.Dv, c.D}, rng, c.self, c.bias ? 0.5 : 0.0);
  in.valid_lens = c.valid_lens;
  if (c.key_padding) in.key_padding = testing::randomBools({c.B, c.S}, rng, 0.75);
  if (c.attn_mask != AttnMaskKind::None) {
    const Shape shape = c.attn_mask == AttnMaskKind::Mask2D ? Shape{c.L, c.S} : Shape{c.B, c.L, c.S};
    in.attn_mask = testing::randomBools(shape, rng, 0.75);
  }
  return in;
}

AttentionOptions makeOptions(const Case& c) {
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse(c.mask);
  o.fill = c.fill;
  o.scale_mode = c.scale;
  o.custom_scale = c.custom_scale;
  return o;
}

const MaskFill kInf = MaskFill::NegInf;
const MaskFill k1e9 = MaskFill::NegBillion;

//            name                 B  L  S  Dq Dk Dv  D  H  self  bias  mask
const Case kCases[] = {
    {"self_basic",                 1, 6, 6, 16, 16, 16, 16, 4, true, true, "none"},
    {"self_no_bias",               2, 5, 5, 12, 12, 12, 12, 3, true, false, "none"},
    {"cross_L_ne_S",               2, 4, 7, 8, 8, 8, 8, 2, false, true, "none"},
    {"cross_dims_differ",          2, 4, 6, 10, 7, 5, 12, 3, false, true, "none"},
    {"odd_sizes",                  1, 7, 5, 15, 15, 15, 15, 3, false, true, "none"},
    {"H1",                         2, 5, 5, 9, 9, 9, 9, 1, false, true, "none"},
    {"d1",                         1, 6, 4, 5, 5, 5, 5, 5, false, true, "causal-br"},
    {"causal",                     2, 6, 6, 16, 16, 16, 16, 4, true, true, "causal"},
    {"causal_L_lt_S",              1, 3, 7, 8, 8, 8, 8, 2, false, true, "causal"},
    {"causal_br_L_lt_S",           2, 3, 7, 8, 8, 8, 8, 2, false, true, "causal-br"},
    {"causal_br_L_gt_S_inf",       1, 7, 4, 8, 8, 8, 8, 2, false, true, "causal-br"},
    {"causal_br_L_gt_S_1e9",       1, 7, 4, 8, 8, 8, 8, 2, false, true, "causal-br", k1e9},
    {"window",                     1, 9, 9, 12, 12, 12, 12, 2, true, true, "window:2"},
    {"window_0",                   1, 5, 5, 8, 8, 8, 8, 2, true, true, "window:0"},
    {"causal_window",              2, 8, 8, 8, 8, 8, 8, 4, true, true, "causal-window:3"},
    {"prefix",                     1, 8, 8, 8, 8, 8, 8, 2, true, true, "prefix:3"},
    {"segments",                   1, 9, 9, 8, 8, 8, 8, 2, true, true, "segments:3,2"},
    {"segments_cross",             1, 6, 8, 8, 8, 8, 8, 2, false, true, "segments:2,4"},
    {"padding_valid_lens",         3, 5, 6, 8, 8, 8, 8, 2, false, true, "padding", kInf, ScaleMode::InvSqrtD, 1.0f, {6, 3, 1}},
    {"padding_valid_len_0_inf",    2, 4, 5, 8, 8, 8, 8, 2, false, true, "padding", kInf, ScaleMode::InvSqrtD, 1.0f, {0, 2}},
    {"padding_valid_len_0_1e9",    2, 4, 5, 8, 8, 8, 8, 2, false, true, "padding", k1e9, ScaleMode::InvSqrtD, 1.0f, {0, 2}},
    {"key_padding",                3, 4, 6, 8, 8, 8, 8, 2, false, true, "none", kInf, ScaleMode::InvSqrtD, 1.0f, {}, true},
    {"padding_via_key_padding",    2, 4, 6, 8, 8, 8, 8, 2, false, true, "padding", kInf, ScaleMode::InvSqrtD, 1.0f, {}, true},
    {"attn_mask_2d",               2, 5, 6, 8, 8, 8, 8, 2, false, true, "none", kInf, ScaleMode::InvSqrtD, 1.0f, {}, false, AttnMaskKind::Mask2D},
    {"attn_mask_3d_1e9",           2, 5, 6, 8, 8, 8, 8, 2, false, true, "none", k1e9, ScaleMode::InvSqrtD, 1.0f, {}, false, AttnMaskKind::Mask3D},
    {"causal_plus_padding",        2, 6, 6, 12, 12, 12, 12, 3, true, true, "causal+padding", kInf, ScaleMode::InvSqrtD, 1.0f, {6, 4}},
    {"causal_window_segments",     1, 10, 10, 8, 8, 8, 8, 2, true, true, "causal+window:2+segments:4,3"},
    {"everything",                 2, 8, 8, 8, 8, 8, 8, 2, false, true, "causal-br+window:4+prefix:2+padding", kInf, ScaleMode::InvSqrtD, 1.0f, {7, 5}, true, AttnMaskKind::Mask3D},
    {"everything_1e9",             2, 8, 8, 8, 8, 8, 8, 2, false, true, "causal-br+window:4+prefix:2+padding", k1e9, ScaleMode::InvSqrtD, 1.0f, {7, 5}, true, AttnMaskKind::Mask3D},
    {"scale_none",                 1, 5, 5, 8, 8, 8, 8, 2, true, true, "causal", kInf, ScaleMode::None},
    {"scale_custom",               1, 5, 7, 8, 8, 8, 8, 2, false, true, "none", kInf, ScaleMode::Custom, 0.05f},
    {"scale_custom_large",         1, 5, 7, 8, 8, 8, 8, 2, false, false, "causal-br", kInf, ScaleMode::Custom, 3.0f},
    {"wide",                       2, 33, 17, 64, 48, 40, 64, 8, false, true, "causal-br+padding", kInf, ScaleMode::InvSqrtD, 1.0f, {17, 9}},
    {"seed004",                    2, 4, 6, 100, 100, 100, 100, 5, false, false, "padding", kInf, ScaleMode::InvSqrtD, 1.0f, {3, 2}},
};

class AttentionCase : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionCase, MatchesFloat64Reference) {
  const Case& c = GetParam();
  const AttentionInputs in = makeInputs(c, 1234u + static_cast<uint32_t>(c.L * 31 + c.S));
  const AttentionOptions o = makeOptions(c);
  const AttentionTrace t = runAttention(in, o);
  const testing::Reference r = referenceAttention(in, o);
  const int64_t d = c.D / c.H;

  ASSERT_EQ(t.B, c.B);
  ASSERT_EQ(t.L, c.L);
  ASSERT_EQ(t.S, c.S);
  ASSERT_EQ(t.d, d);
  ASSERT_EQ(t.output.shape, (Shape{c.B, c.L, c.D}));
  ASSERT_EQ(t.probs.shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.q.shape, (Shape{c.B, c.H, c.L, d}));
  ASSERT_EQ(t.k.shape, (Shape{c.B, c.H, c.S, d}));
  ASSERT_EQ(t.context.shape, (Shape{c.B, c.L, c.D}));

  ASSERT_EQ(t.mask.allowed.data, r.allowed) << "mask differs from the reference predicates";
  ASSERT_EQ(t.fully_masked.data, r.fully_masked);

  for (size_t n = 0; n < r.q_proj.size(); ++n) ASSERT_NEAR(t.q_proj.data[n], r.q_proj[n], tolerance(r.q_proj[n])) << n;
  const float fill = c.fill == kInf ? -std::numeric_limits<float>::infinity() : -1e9f;
  for (size_t n = 0; n < r.scores.size(); ++n) {
    if (std::isinf(r.scores[n]) || r.scores[n] == -1e9) {
      ASSERT_EQ(t.scores.data[n], fill) << "masked score " << n;
    } else {
      ASSERT_NEAR(t.scores.data[n], r.scores[n], tolerance(r.scores[n])) << "score " << n;
    }
  }
  for (size_t n = 0; n < r.probs.size(); ++n) {
    ASSERT_NEAR(t.probs.data[n], r.probs[n], 1e-5) << "prob " << n;
    if (r.probs[n] == 0.0) {
      ASSERT_EQ(t.probs.data[n], 0.0f) << "masked probability must be exactly 0, at " << n;
    }
  }
  ASSERT_TRUE(t.probs_dropped.empty());  // no dropout: no copy of probs
  ASSERT_EQ(&t.probsAfterDropout(), &t.probs);
  for (size_t n = 0; n < r.context.size(); ++n) ASSERT_NEAR(t.context.data[n], r.context[n], tolerance(r.context[n])) << n;
  for (size_t n = 0; n < r.output.size(); ++n) ASSERT_NEAR(t.output.data[n], r.output[n], tolerance(r.output[n])) << n;

  // Rows that are not fully masked sum to 1; fully masked rows: 0 (-inf) or uniform (-1e9).
  for (int64_t bh = 0; bh < c.B * c.H; ++bh)
    for (int64_t i = 0; i < c.L; ++i) {
      double sum = 0.0;
      for (int64_t j = 0; j < c.S; ++j) sum += t.probs.data[(bh * c.L + i) * c.S + j];
      const bool full = t.fully_masked.data[(bh / c.H) * c.L + i];
      ASSERT_NEAR(sum, full && c.fill == kInf ? 0.0 : 1.0, 1e-5);
    }
  // Fully masked with -inf: context 0, so the output row is exactly b_o.
  if (c.fill == kInf) {
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.L; ++i) {
        if (!t.fully_masked.data[b * c.L + i]) continue;
        for (int64_t k = 0; k < c.D; ++k) {
          ASSERT_EQ(t.context.data[(b * c.L + i) * c.D + k], 0.0f);
          ASSERT_NEAR(t.output.data[(b * c.L + i) * c.D + k], in.b_o.empty() ? 0.0f : in.b_o.data[k], 1e-6);
        }
      }
  }
}

// Layout stages are pure copies: check them element for element.
TEST_P(AttentionCase, LayoutStagesAreExactCopies) {
  const Case& c = GetParam();
  const AttentionInputs in = makeInputs(c, 99u);
  const AttentionTrace t = runAttention(in, makeOptions(c));
  const int64_t d = c.D / c.H;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.L; ++i)
        for (int64_t k = 0; k < d; ++k) {
          ASSERT_EQ(t.q.data[((b * c.H + h) * c.L + i) * d + k], t.q_proj.data[(b * c.L + i) * c.D + h * d + k]);
          ASSERT_EQ(t.context.data[(b * c.L + i) * c.D + h * d + k], t.context_heads.data[((b * c.H + h) * c.L + i) * d + k]);
        }
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t j = 0; j < c.S; ++j)
        for (int64_t k = 0; k < d; ++k) {
          ASSERT_EQ(t.k.data[((b * c.H + h) * c.S + j) * d + k], t.k_proj.data[(b * c.S + j) * c.D + h * d + k]);
          ASSERT_EQ(t.v.data[((b * c.H + h) * c.S + j) * d + k], t.v_proj.data[(b * c.S + j) * c.D + h * d + k]);
        }
  ASSERT_EQ(t.query.data, in.query.data);
  ASSERT_EQ(t.key.data, in.key.data);
  ASSERT_EQ(t.value.data, in.value.data);
}

INSTANTIATE_TEST_SUITE_P(Table, AttentionCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(Attention, StagesInPipelineOrderWithShapes) {
  const Case c{"stages", 2, 4, 6, 10, 7, 5, 12, 3, false, true, "causal-br"};
  const AttentionTrace t = runAttention(makeInputs(c, 5u), makeOptions(c));
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"query", {2, 4, 10}},        {"key", {2, 6, 7}},           {"value", {2, 6, 5}},
      {"q_proj", {2, 4, 12}},       {"q_view", {2, 4, 3, 4}},     {"q_transpose", {2, 3, 4, 4}},
      {"k_proj", {2, 6, 12}},       {"k_view", {2, 6, 3, 4}},     {"k_transpose", {2, 3, 6, 4}},
      {"v_proj", {2, 6, 12}},       {"v_view", {2, 6, 3, 4}},     {"v_transpose", {2, 3, 6, 4}},
      {"scores", {2, 3, 4, 6}},     {"masked_scores", {2, 3, 4, 6}}, {"probs", {2, 3, 4, 6}},
      {"dropout", {2, 3, 4, 6}},    {"context_heads", {2, 3, 4, 4}}, {"context_transpose", {2, 4, 3, 4}},
      {"context_view", {2, 4, 12}}, {"output", {2, 4, 12}},
  };
  ASSERT_EQ(t.stages.size(), expected.size());
  for (size_t n = 0; n < expected.size(); ++n) {
    EXPECT_EQ(t.stages[n].name, expected[n].first);
    EXPECT_EQ(t.stages[n].shape, expected[n].second) << expected[n].first;
    EXPECT_FALSE(t.stages[n].op.empty());
    EXPECT_FALSE(t.stages[n].code.empty());
  }
  EXPECT_EQ(t.stages[3].op, "linear");
  EXPECT_EQ(t.stages[4].op, "view");
  EXPECT_EQ(t.stages[5].op, "transpose(1,2)");
  EXPECT_EQ(t.stages[12].op, "matmul * scale");
  EXPECT_EQ(t.stages[14].op, "softmax");
  EXPECT_EQ(t.stages[7].code, "k = k.view(B, S, H, d)");  // K split with S, not L (seed 000's bug)
  EXPECT_NE(t.stages[12].code.find("/ math.sqrt(d)"), std::string::npos);
  EXPECT_EQ(t.stages[12].code.find("//"), std::string::npos);  // never floor division
  EXPECT_NE(t.stages[18].code.find(".contiguous()"), std::string::npos);
  EXPECT_EQ(t.query_tokens, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(t.key_tokens, (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
}

TEST(Attention, ScaleIsTrueDivisionBySqrtD) {
  const Case c{"scale", 1, 3, 3, 8, 8, 8, 8, 2, true, false, "none"};
  AttentionTrace t = runAttention(makeInputs(c, 3u), makeOptions(c));
  EXPECT_FLOAT_EQ(t.scale, 0.5f);  // d = 4
  int64_t non_integer = 0;  // floor division (seed 000's `//`) would make every score an integer
  for (size_t n = 0; n < t.scores.data.size(); ++n) {
    EXPECT_FLOAT_EQ(t.scores.data[n], t.raw_scores.data[n] * 0.5f);
    non_integer += t.scores.data[n] != std::floor(t.scores.data[n]);
  }
  EXPECT_GT(non_integer, 0);
}

TEST(Attention, TokensAreCopied) {
  const Case c{"tokens", 1, 3, 2, 4, 4, 4, 4, 1, false, false, "none"};
  AttentionInputs in = makeInputs(c, 8u);
  in.query_tokens = {"I", "love", "猫"};
  in.key_tokens = {"a", "b"};
  const AttentionTrace t = runAttention(in, makeOptions(c));
  EXPECT_EQ(t.query_tokens, in.query_tokens);
  EXPECT_EQ(t.key_tokens, in.key_tokens);
}

}  // namespace
}  // namespace attnscope
