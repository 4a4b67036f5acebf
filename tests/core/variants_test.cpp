// Attention variants (GQA/MQA, RoPE, ALiBi, soft-capping, sinks), table-driven against the
// float64 reference in reference.h, which writes each variant from its paper's formula:
// probabilities and output within 1e-5, masked probabilities exactly 0.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <random>

#include "attention/attention.h"
#include "reference.h"

namespace attnscope {
namespace {

using testing::tolerance;

struct VariantCase {
  const char* name;
  int64_t B, L, S, Dq, D, H, G;
  bool self;  // key = value = query (needs L == S)
  const char* mask;
  bool rope = false;
  RopeStyle rope_style = RopeStyle::RotateHalf;
  double rope_base = 10000.0;
  bool alibi = false;
  std::optional<float> softcap = std::nullopt;
  float scale = 0.0f;  // > 0: custom scale (makes soft-capping bite)
  MaskFill fill = MaskFill::NegInf;
  std::vector<int64_t> valid_lens = {};
};

std::ostream& operator<<(std::ostream& os, const VariantCase& c) { return os << c.name; }

// Seeded MHA inputs, then K/V projections cut to G heads: w_k [G*d, Dk], w_v [G*d, Dv].
AttentionInputs makeInputs(const VariantCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionInputs in = testing::randomInputs({c.B, c.L, c.S, c.Dq, c.Dq, c.Dq, c.D}, rng, c.self, 0.3, 1.5);
  const int64_t rows = c.G * (c.D / c.H);
  testing::keepKeyValueRows(in, rows);
  in.valid_lens = c.valid_lens;
  return in;
}

AttentionOptions makeOptions(const VariantCase& c) {
  AttentionOptions o;
  o.heads = c.H;
  o.kv_heads = c.G;
  o.mask = MaskSpec::parse(c.mask);
  o.fill = c.fill;
  o.rope = c.rope;
  o.rope_style = c.rope_style;
  o.rope_base = c.rope_base;
  o.alibi = c.alibi;
  o.softcap = c.softcap;
  if (c.scale > 0.0f) {
    o.scale_mode = ScaleMode::Custom;
    o.custom_scale = c.scale;
  }
  return o;
}

const RopeStyle kHalf = RopeStyle::RotateHalf;
const RopeStyle kInterleaved = RopeStyle::Interleaved;
const MaskFill k1e9 = MaskFill::NegBillion;

//  name                       B  L     S     Dq  D   H  G  self   mask
const VariantCase kCases[] = {
    {"mqa_G1",                 2, 6,    6,    16, 16, 4, 1, true,  "causal"},
    {"gqa_G2_cross",           2, 5,    7,    12, 24, 6, 2, false, "none"},
    {"gqa_G3_padding",         2, 6,    8,    10, 24, 6, 3, false, "padding", false, kHalf, 1e4, false, {}, 0, MaskFill::NegInf, {8, 3}},
    {"mha_G_equals_H",         1, 5,    5,    16, 16, 4, 4, true,  "causal-br"},
    {"gqa_window_1e9",         1, 9,    9,    8,  16, 4, 2, true,  "window:2", false, kHalf, 1e4, false, {}, 0, k1e9},
    {"rope_half_past_1000",    1, 1040, 1040, 8,  16, 2, 2, true,  "causal-window:24", true, kHalf},
    {"rope_interleaved_1000",  1, 1040, 1040, 8,  16, 2, 2, true,  "causal-window:24", true, kInterleaved},
    {"rope_half_base_500k",    1, 1100, 1100, 8,  8,  1, 1, true,  "window:8", true, kHalf, 500000.0},
    {"rope_cross_L_ne_S",      2, 5,    9,    12, 24, 3, 3, false, "none", true, kHalf},
    {"rope_interleaved_cross", 2, 5,    9,    12, 24, 3, 1, false, "segments:2,3", true, kInterleaved},
    {"alibi_H8",               1, 10,   10,   16, 32, 8, 8, true,  "causal", false, kHalf, 1e4, true},
    {"alibi_H6_cross",         2, 7,    9,    12, 24, 6, 6, false, "none", false, kHalf, 1e4, true},
    {"alibi_H6_gqa_prefix",    1, 9,    9,    12, 24, 6, 3, true,  "prefix:3", false, kHalf, 1e4, true},
    {"softcap",                1, 8,    8,    16, 16, 2, 2, true,  "none", false, kHalf, 1e4, false, 2.0f, 3.0f},
    {"softcap_causal_br",      2, 4,    7,    12, 16, 4, 2, false, "causal-br", false, kHalf, 1e4, false, 0.5f, 2.0f},
    {"softcap_alibi_order",    1, 9,    9,    16, 16, 4, 4, true,  "causal", false, kHalf, 1e4, true, 1.5f, 2.5f},
    {"sinks_causal_window",    1, 14,   14,   8,  16, 2, 2, true,  "causal-window:3+sinks:2"},
    {"sinks_window_bidir",     2, 12,   12,   8,  16, 4, 1, true,  "window:2+sinks:1"},
    {"sinks_padding_1e9",      2, 10,   10,   8,  16, 2, 2, true,  "causal-window:2+sinks:3+padding", false, kHalf, 1e4, false, {}, 0, k1e9, {10, 6}},
    {"llama_gqa_rope_causal",  2, 12,   12,   32, 32, 8, 2, true,  "causal", true, kHalf},
    {"llama_long",             1, 1030, 1030, 16, 32, 4, 2, true,  "causal-window:32+sinks:4", true, kHalf},
    {"everything",             2, 11,   11,   16, 32, 8, 4, true,  "causal-window:4+sinks:2+padding", true, kInterleaved, 1e4, true, 4.0f, 1.5f, k1e9, {11, 7}},
};

class VariantCaseTest : public ::testing::TestWithParam<VariantCase> {};

TEST_P(VariantCaseTest, MatchesFloat64Reference) {
  const VariantCase& c = GetParam();
  const AttentionInputs in = makeInputs(c, 4321u + static_cast<uint32_t>(c.L * 7 + c.H));
  const AttentionOptions o = makeOptions(c);
  const AttentionTrace t = runAttention(in, o);
  const testing::Reference r = testing::referenceAttention(in, o);
  const int64_t d = c.D / c.H;

  ASSERT_EQ(t.G, c.G);
  ASSERT_EQ(r.G, c.G);
  ASSERT_EQ(t.k.shape, (Shape{c.B, c.G, c.S, d}));
  ASSERT_EQ(t.v.shape, (Shape{c.B, c.G, c.S, d}));
  ASSERT_EQ(t.k_proj.shape, (Shape{c.B, c.S, c.G * d}));
  ASSERT_EQ(t.probs.shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.mask.allowed.data, r.allowed) << "mask differs from the reference predicates";

  const float fill = c.fill == MaskFill::NegInf ? -std::numeric_limits<float>::infinity() : -1e9f;
  for (size_t n = 0; n < r.scores.size(); ++n) {
    if (std::isinf(r.scores[n]) || r.scores[n] == -1e9) {
      ASSERT_EQ(t.scores.data[n], fill) << "masked score " << n;
    } else {
      // Scores reach |s| ~ 100 with ALiBi; 1e-5 relative to their size.
      ASSERT_NEAR(t.scores.data[n], r.scores[n], tolerance(r.scores[n], 2e-5)) << "score " << n;
    }
  }
  for (size_t n = 0; n < r.probs.size(); ++n) {
    ASSERT_NEAR(t.probs.data[n], r.probs[n], 1e-5) << "prob " << n;
    if (r.probs[n] == 0.0) {
      ASSERT_EQ(t.probs.data[n], 0.0f) << "masked probability must be exactly 0, at " << n;
    }
  }
  for (size_t n = 0; n < r.output.size(); ++n)
    ASSERT_NEAR(t.output.data[n], r.output[n], tolerance(r.output[n])) << "output " << n;
  if (c.softcap) {
    for (size_t n = 0; n < r.scores.size(); ++n) {
      if (!r.allowed[(n / (c.H * c.L * c.S)) * c.L * c.S + n % (c.L * c.S)] || c.alibi) continue;
      ASSERT_LT(std::fabs(t.scores.data[n]), *c.softcap + 1e-6f) << "soft-capped score " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, VariantCaseTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VariantCase>& info) { return std::string(info.param.name); });

// t.k and t.v are the plain [B, G, S, d] split of k_proj/v_proj [B, S, G*d] (no repeat to H);
// with RoPE, t.k is that split rotated at positions 0..S-1 (checked in double).
TEST(Variants, KeyValueHeadsAreTheGSplit) {
  for (const VariantCase& c : kCases) {
    if (c.L > 100) continue;  // the long cases only add time
    const AttentionTrace t = runAttention(makeInputs(c, 5u), makeOptions(c));
    const int64_t d = c.D / c.H, GD = c.G * d;
    std::vector<double> head(d);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t g = 0; g < c.G; ++g)
        for (int64_t j = 0; j < c.S; ++j) {
          for (int64_t k = 0; k < d; ++k) head[k] = t.k_proj.data[(b * c.S + j) * GD + g * d + k];
          if (c.rope) testing::referenceRope(head.data(), d, j, c.rope_base, c.rope_style);
          for (int64_t k = 0; k < d; ++k) {
            ASSERT_NEAR(t.k.data[((b * c.G + g) * c.S + j) * d + k], head[k], 1e-5) << c.name;
            ASSERT_EQ(t.v.data[((b * c.G + g) * c.S + j) * d + k], t.v_proj.data[(b * c.S + j) * GD + g * d + k]);
          }
        }
  }
}

TEST(Variants, AlibiSlopesOfThePaper) {
  // get_slopes(8) = 2^-1 .. 2^-8; get_slopes(6) = get_slopes(4) + get_slopes(8)[0::2][:2].
  const std::vector<double> h8 = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
  const std::vector<double> h6 = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  const std::vector<double> core8 = alibiSlopes(8), core6 = alibiSlopes(6);
  ASSERT_EQ(core8.size(), h8.size());
  ASSERT_EQ(core6.size(), h6.size());
  for (size_t h = 0; h < h8.size(); ++h) EXPECT_DOUBLE_EQ(core8[h], h8[h]) << h;
  for (size_t h = 0; h < h6.size(); ++h) EXPECT_DOUBLE_EQ(core6[h], h6[h]) << h;
  for (int64_t n = 1; n <= 64; ++n) {
    const std::vector<double> core = alibiSlopes(n), ref = testing::referenceAlibiSlopes(n);
    ASSERT_EQ(core.size(), ref.size()) << n;
    for (int64_t h = 0; h < n; ++h) EXPECT_NEAR(core[h], ref[h], 1e-15) << "H=" << n << " h=" << h;
  }
}

TEST(Variants, RopeScoreDecayStartsAtOneAndFollowsTheCosineSum) {
  for (RopeStyle style : {kHalf, kInterleaved}) {
    const std::vector<float> decay = ropeScoreDecay(64, 10000.0, style, 1500);
    ASSERT_EQ(decay.size(), 1501u);
    for (int64_t m = 0; m <= 1500; ++m) {
      double ref = 0.0;  // (1/d) sum over the d/2 pairs of 2 cos(m base^(-2c/d))
      for (int64_t c = 0; c < 32; ++c) ref += 2.0 * std::cos(double(m) * std::pow(10000.0, -2.0 * c / 64.0));
      ASSERT_NEAR(decay[m], ref / 64.0, 1e-5) << m;
    }
    EXPECT_NEAR(decay[0], 1.0f, 1e-6);
    EXPECT_LT(decay[200], 0.5f);  // it decays with distance
    EXPECT_LT(decay[200], decay[10]);
  }
}

TEST(Variants, GroupedStagesShowTheRepeat) {
  const VariantCase c{"stages", 2, 4, 6, 12, 24, 6, 2, false, "causal", true, kHalf, 1e4, true, 5.0f};
  const AttentionTrace t = runAttention(makeInputs(c, 3u), makeOptions(c));
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"k_proj", {2, 6, 8}},       {"k_view", {2, 6, 2, 4}},    {"k_transpose", {2, 2, 6, 4}},
      {"v_proj", {2, 6, 8}},       {"v_view", {2, 6, 2, 4}},    {"v_transpose", {2, 2, 6, 4}},
      {"q_rope", {2, 6, 4, 4}},    {"k_rope", {2, 2, 6, 4}},    {"k_repeat", {2, 6, 6, 4}},
      {"v_repeat", {2, 6, 6, 4}},  {"scores", {2, 6, 4, 6}},    {"softcap", {2, 6, 4, 6}},
      {"alibi", {2, 6, 4, 6}},     {"masked_scores", {2, 6, 4, 6}}};
  size_t at = 0;
  for (const Stage& s : t.stages) {
    if (at < expected.size() && s.name == expected[at].first) {
      EXPECT_EQ(s.shape, expected[at].second) << s.name;
      ++at;
    }
  }
  EXPECT_EQ(at, expected.size()) << "stages missing or out of order";
  const std::vector<Variant> active = {Variant::GroupedQuery, Variant::Rope, Variant::SoftCap, Variant::Alibi};
  EXPECT_EQ(t.variants, active);
  EXPECT_EQ(t.alibi_slopes.size(), 6u);
  for (const Stage& s : t.stages) {
    if (s.name == "k_repeat") {
      EXPECT_NE(s.code.find("repeat_interleave(H // G, dim=1)"), std::string::npos) << s.code;
    }
  }
}

struct VariantBadCase {
  const char* name;
  std::function<void(AttentionInputs&, AttentionOptions&)> mutate;
  const char* message;
};

const VariantBadCase kBadCases[] = {
    {"G_not_dividing_H", [](AttentionInputs&, AttentionOptions& o) { o.kv_heads = 3; },
     "kv_heads G=3 does not divide H=4"},
    {"w_k_rows_not_multiple_of_d",
     [](AttentionInputs& in, AttentionOptions& o) {
       o.kv_heads = 0;
       in.w_k = Tensor({6, 16});
     },
     "w_k has 6 rows, not a multiple of the head size d=4"},
    {"w_k_rows_vs_kv_heads", [](AttentionInputs& in, AttentionOptions&) { in.w_k = Tensor({16, 16}); },
     "w_k has shape [16, 16] but kv_heads needs [G*d, Dk] = [8, 16]"},
    {"w_v_rows", [](AttentionInputs& in, AttentionOptions&) { in.w_v = Tensor({4, 16}); },
     "w_v has shape [4, 16] but expected [G*d, Dv] = [8, 16]"},
    {"b_k_rows", [](AttentionInputs& in, AttentionOptions&) { in.b_k = Tensor({16}); },
     "b_k has shape [16] but expected [8]"},
    {"odd_d_with_rope",
     [](AttentionInputs& in, AttentionOptions& o) {
       o.heads = 1;
       o.kv_heads = 1;
       in.w_q = Tensor({15, 16});
       in.w_k = Tensor({15, 16});
       in.w_v = Tensor({15, 16});
       in.w_o = Tensor({15, 15});
       in.b_q = in.b_k = in.b_v = in.b_o = Tensor();
       o.rope = true;
     },
     "RoPE needs an even head size d, got d=15"},
    {"rope_base", [](AttentionInputs&, AttentionOptions& o) { o.rope = true, o.rope_base = 0.5; },
     "RoPE base must be a finite number > 1, got 0.5"},
    {"cap_zero", [](AttentionInputs&, AttentionOptions& o) { o.softcap = 0.0f; }, "soft-cap must be a finite number > 0, got 0"},
    {"cap_negative", [](AttentionInputs&, AttentionOptions& o) { o.softcap = -3.0f; },
     "soft-cap must be a finite number > 0, got -3"},
    {"sinks_without_window", [](AttentionInputs&, AttentionOptions& o) { o.mask.sinks = 2; },
     "mask: sinks:2 needs a window term (window:W or causal-window:W)"},
    {"mistake_shared_with_gqa", [](AttentionInputs&, AttentionOptions& o) { o.mistake = Mistake::SharedProjection; },
     "mistake 'shared-linear' needs as many K/V heads as query heads, got G=2 and H=4"},
};

class VariantBadInput : public ::testing::TestWithParam<VariantBadCase> {};

TEST_P(VariantBadInput, OneLineError) {
  const VariantCase c{"bad", 1, 3, 3, 16, 16, 4, 2, true, "none"};
  AttentionInputs in = makeInputs(c, 1u);
  AttentionOptions o = makeOptions(c);
  GetParam().mutate(in, o);
  try {
    runAttention(in, o);
    FAIL() << "no error for " << GetParam().name;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(GetParam().message), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, VariantBadInput, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<VariantBadCase>& info) { return std::string(info.param.name); });

TEST(Variants, SinksMaskTextRoundTripsAndNeedsAWindow) {
  const MaskSpec spec = MaskSpec::parse("causal-window:4+sinks:2");
  EXPECT_EQ(spec.sinks, 2);
  EXPECT_EQ(spec.toString(), "causal-window:4+sinks:2");
  EXPECT_EQ(MaskSpec::parse(spec.toString()), spec);
  EXPECT_EQ(spec.shortName(), "causalwindow4+sinks2");
  EXPECT_THROW(MaskSpec::parse("causal+sinks:2"), InputError);
  EXPECT_EQ(ropeStyleNames().parse("interleaved"), kInterleaved);
  EXPECT_THROW(ropeStyleNames().parse("rotate"), InputError);
}

}  // namespace
}  // namespace attnscope
