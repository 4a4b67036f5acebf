// The mistakes lab: each Mistake runs attention the way a buggy PyTorch module would.
// Every (case, mistake) row is compared with a float64 loop reference of that buggy
// module written here (it shares only the mask predicates of reference.h), within 1e-5;
// then each mistake's visible effect is asserted (integer scores, identical heads,
// symmetric scores, torch's exact error messages, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/attention.h"
#include "attention/mistakes.h"
#include "reference.h"
#include "config/settings.h"

namespace attnscope {
namespace {

using testing::tolerance;

const Mistake kAllMistakes[] = {Mistake::None,        Mistake::FloorDivisionScale,      Mistake::KVReshapedWithQueryLength,
                                Mistake::NoHeadSplit, Mistake::SharedProjection,        Mistake::NoScaling,
                                Mistake::ReshapeWithoutTranspose, Mistake::MaskNotBroadcast};

struct Case {
  const char* name;
  int64_t B, L, S, Dq, Dk, Dv, D, H;
  bool self;  // key = value = query
  bool bias;
  const char* mask;
  std::vector<int64_t> valid_lens = {};
  bool key_padding = false;
  MaskFill fill = MaskFill::NegInf;
  ScaleMode scale = ScaleMode::InvSqrtD;
};

AttentionInputs makeInputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  // w_q, w_k at 2/sqrt(fan_in) so scores spread over several integers (floor division).
  AttentionInputs in = testing::randomInputs({c.B, c.L, c.S, c.Dq, c.Dk, c.Dv, c.D}, rng, c.self,
                                             c.bias ? 0.5 : 0.0, /*qk_gain=*/2.0);
  in.valid_lens = c.valid_lens;
  if (c.key_padding) in.key_padding = testing::randomBools({c.B, c.S}, rng, 0.7);
  return in;
}

AttentionOptions makeOptions(const Case& c, Mistake mistake) {
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse(c.mask);
  o.fill = c.fill;
  o.scale_mode = c.scale;
  o.mistake = mistake;
  return o;
}

// Whether PyTorch would run this buggy module at all on these sizes (else it raises).
bool runs(const Case& c, Mistake m) {
  const bool padding = (MaskSpec::parse(c.mask).padding) || c.key_padding;
  if (m == Mistake::KVReshapedWithQueryLength) return c.S == c.L;
  if (m == Mistake::SharedProjection) return c.Dq == c.D && c.Dk == c.D && c.Dv == c.D;
  if (m == Mistake::MaskNotBroadcast) return !padding || c.B == c.L || c.B == 1;
  return true;
}

// The buggy module in float64 loops. Layouts as in core/attention.h.
struct Wrong {
  std::vector<uint8_t> allowed;  // [B, L, S] the mask actually applied
  std::vector<double> raw;       // [B, H, L, S]
  std::vector<double> scores;    // [B, H, L, S], masked = fill
  std::vector<double> probs;     // [B, H, L, S]
  std::vector<double> context;   // [B, L, D]
  std::vector<double> output;    // [B, L, D]
  int64_t near_integer = 0;      // floor-div scores within 1e-4 of a step (float32 may round across)
};

Wrong wrongReference(const AttentionInputs& in, const AttentionOptions& o) {
  const Mistake m = o.mistake;
  const int64_t B = in.query.shape[0], L = in.query.shape[1], S = in.key.shape[1];
  const int64_t D = in.w_q.shape[0], H = o.heads, d = D / H;
  const bool shared = m == Mistake::SharedProjection;
  const std::vector<double> qp = testing::referenceProject(in.query, in.w_q, in.b_q);
  const std::vector<double> kp = testing::referenceProject(in.key, shared ? in.w_q : in.w_k, shared ? in.b_q : in.b_k);
  const std::vector<double> vp = testing::referenceProject(in.value, shared ? in.w_q : in.w_v, shared ? in.b_q : in.b_v);

  double scale = 1.0;
  if (o.scale_mode == ScaleMode::InvSqrtD) scale = 1.0 / std::sqrt(double(d));
  if (o.scale_mode == ScaleMode::Custom) scale = o.custom_scale;
  if (m == Mistake::NoScaling) scale = 1.0;
  const double fill = o.fill == MaskFill::NegInf ? -std::numeric_limits<double>::infinity() : -1e9;

  // Mask: padding terms (valid_lens / key_padding, both [B, S]) are looked up with the
  // batch index torch's broadcast gives them: [1, 1, B, S] against [.., L, S] -> row i.
  MaskSpec no_padding = o.mask;
  no_padding.padding = false;
  AttentionInputs no_padding_in;
  no_padding_in.attn_mask = in.attn_mask;
  Wrong w;
  w.allowed.resize(B * L * S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) {
        const int64_t pb = m == Mistake::MaskNotBroadcast ? (B == 1 ? 0 : i) : b;
        bool a = testing::referenceAllowed(no_padding, no_padding_in, b, i, j, L, S);
        if (o.mask.padding && !in.valid_lens.empty() && j >= in.valid_lens[pb]) a = false;
        if (!in.key_padding.empty() && !in.key_padding.data[pb * S + j]) a = false;
        w.allowed[(b * L + i) * S + j] = a;
      }

  w.raw.resize(B * H * L * S);
  w.scores.resize(B * H * L * S);
  w.probs.resize(B * H * L * S);
  std::vector<double> context_heads(B * H * L * d, 0.0);  // [B, H, L, d]
  w.context.assign(B * L * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const size_t row = ((b * H + h) * L + i) * S;
        bool any = false;
        for (int64_t j = 0; j < S; ++j) {
          // no-head-split: the dot product runs over all D columns, the same for every h.
          const int64_t c0 = m == Mistake::NoHeadSplit ? 0 : h * d, c1 = m == Mistake::NoHeadSplit ? D : h * d + d;
          double dot = 0.0;
          for (int64_t c = c0; c < c1; ++c) dot += qp[(b * L + i) * D + c] * kp[(b * S + j) * D + c];
          double scaled = dot * scale;
          if (m == Mistake::FloorDivisionScale) {
            const double x = dot / std::sqrt(double(d));
            if (std::fabs(x - std::round(x)) < 1e-4) ++w.near_integer;
            scaled = std::floor(x);
          }
          const bool a = w.allowed[(b * L + i) * S + j];
          any = any || a;
          w.raw[row + j] = dot;
          w.scores[row + j] = a ? scaled : fill;
        }
        if (!any && o.fill == MaskFill::NegInf) {
          for (int64_t j = 0; j < S; ++j) w.probs[row + j] = 0.0;
        } else {
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < S; ++j) mx = std::max(mx, w.scores[row + j]);
          double sum = 0.0;
          for (int64_t j = 0; j < S; ++j) sum += w.probs[row + j] = std::exp(w.scores[row + j] - mx);
          for (int64_t j = 0; j < S; ++j) w.probs[row + j] /= sum;
        }
        if (m == Mistake::NoHeadSplit) {
          if (h > 0) continue;  // one map: context = probs [L, S] x V [S, D] over the full D
          for (int64_t c = 0; c < D; ++c)
            for (int64_t j = 0; j < S; ++j) w.context[(b * L + i) * D + c] += w.probs[row + j] * vp[(b * S + j) * D + c];
          continue;
        }
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0.0;
          for (int64_t j = 0; j < S; ++j) acc += w.probs[row + j] * vp[(b * S + j) * D + h * d + c];
          context_heads[((b * H + h) * L + i) * d + c] = acc;
        }
      }
  if (m != Mistake::NoHeadSplit) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t c = 0; c < d; ++c) {
            const size_t from = ((b * H + h) * L + i) * d + c;
            // reshape without transpose: flat element n of [B, H, L, d] is element n of [B, L, D].
            const size_t to = m == Mistake::ReshapeWithoutTranspose ? from : (b * L + i) * D + h * d + c;
            w.context[to] = context_heads[from];
          }
  }
  const Tensor& wo = shared ? in.w_q : in.w_o;
  const Tensor& bo = shared ? in.b_q : in.b_o;
  w.output.resize(B * L * D);
  for (int64_t n = 0; n < B * L; ++n)
    for (int64_t out = 0; out < D; ++out) {
      double acc = bo.empty() ? 0.0 : bo.data[out];
      for (int64_t c = 0; c < D; ++c) acc += w.context[n * D + c] * wo.data[out * D + c];
      w.output[n * D + out] = acc;
    }
  return w;
}

//          name                   B  L  S  Dq Dk Dv  D  H  self  bias  mask
const Case kCases[] = {
    {"self_causal",                2, 5, 5, 12, 12, 12, 12, 3, true, true, "causal"},
    {"self_H1",                    1, 6, 6, 8, 8, 8, 8, 1, true, false, "none"},
    {"cross_dims_differ",          3, 4, 7, 10, 9, 6, 10, 2, false, true, "none"},
    {"cross_L_gt_S_odd",           2, 7, 3, 15, 15, 15, 15, 5, false, true, "causal-br"},
    {"padding_B_eq_L",             3, 3, 5, 8, 8, 8, 8, 2, false, true, "padding", {5, 2, 4}},
    {"padding_B_eq_L_self_1e9",    4, 4, 4, 8, 8, 8, 8, 4, true, true, "causal+padding", {4, 1, 3, 2}, false, MaskFill::NegBillion},
    {"key_padding_B_eq_L",         4, 4, 6, 12, 12, 12, 12, 3, false, true, "window:2", {}, true},
    {"padding_B1",                 1, 5, 6, 8, 8, 8, 8, 2, false, true, "padding", {4}},
    {"custom_scale_self",          2, 6, 6, 16, 16, 16, 16, 4, true, true, "none", {}, false, MaskFill::NegInf, ScaleMode::Custom},
    {"scale_none_causal_B_ne_L",   2, 5, 5, 8, 8, 8, 8, 2, true, true, "causal", {}, false, MaskFill::NegInf, ScaleMode::None},
};

struct Row {
  Case c;
  Mistake mistake;
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.c.name << "/" << mistakeName(r.mistake); }

std::vector<Row> runnableRows() {
  std::vector<Row> rows;
  for (const Case& c : kCases)
    for (Mistake m : kAllMistakes)
      if (runs(c, m)) rows.push_back({c, m});
  return rows;
}

class MistakeCase : public ::testing::TestWithParam<Row> {};

TEST_P(MistakeCase, MatchesFloat64ReferenceOfTheBuggyModule) {
  const Row& row = GetParam();
  const Case& c = row.c;
  const AttentionInputs in = makeInputs(c, 777u + static_cast<uint32_t>(c.L * 13 + c.S));
  const AttentionOptions o = makeOptions(c, row.mistake);
  const AttentionTrace t = runAttention(in, o);
  const Wrong w = wrongReference(in, o);
  const int64_t d = c.D / c.H;

  // The trace keeps the layout the GUI draws, whatever the mistake did.
  ASSERT_EQ(t.mistake, row.mistake);
  ASSERT_EQ(t.raw_scores.shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.scores.shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.probs.shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.probsAfterDropout().shape, (Shape{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(t.q.shape, (Shape{c.B, c.H, c.L, d}));
  ASSERT_EQ(t.k.shape, (Shape{c.B, c.H, c.S, d}));
  ASSERT_EQ(t.context_heads.shape, (Shape{c.B, c.H, c.L, d}));
  ASSERT_EQ(t.context.shape, (Shape{c.B, c.L, c.D}));
  ASSERT_EQ(t.output.shape, (Shape{c.B, c.L, c.D}));
  ASSERT_EQ(t.mask.allowed.shape, (Shape{c.B, c.L, c.S}));
  ASSERT_EQ(t.stages.size(), 20u);
  EXPECT_EQ(t.mistake_note.empty(), row.mistake == Mistake::None);

  ASSERT_EQ(t.mask.allowed.data, w.allowed) << "applied mask differs from the buggy module's";
  ASSERT_EQ(w.near_integer, 0) << "a floor-div score sits on a step: pick another seed";
  const float fill = c.fill == MaskFill::NegInf ? -std::numeric_limits<float>::infinity() : -1e9f;
  for (size_t n = 0; n < w.raw.size(); ++n) ASSERT_NEAR(t.raw_scores.data[n], w.raw[n], tolerance(w.raw[n])) << n;
  for (size_t n = 0; n < w.scores.size(); ++n) {
    if (std::isinf(w.scores[n]) || w.scores[n] == -1e9) {
      ASSERT_EQ(t.scores.data[n], fill) << "masked score " << n;
    } else {
      ASSERT_NEAR(t.scores.data[n], w.scores[n], tolerance(w.scores[n])) << "score " << n;
    }
  }
  for (size_t n = 0; n < w.probs.size(); ++n) ASSERT_NEAR(t.probs.data[n], w.probs[n], 1e-5) << "prob " << n;
  for (size_t n = 0; n < w.context.size(); ++n) {
    ASSERT_NEAR(t.context.data[n], w.context[n], tolerance(w.context[n])) << "context " << n;
  }
  for (size_t n = 0; n < w.output.size(); ++n) {
    ASSERT_NEAR(t.output.data[n], w.output[n], tolerance(w.output[n])) << "output " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, MistakeCase, ::testing::ValuesIn(runnableRows()));

// ---- visible effects ----

const Case kSelf = kCases[0];   // B=2, L=S=5, H=3, causal, self-attention
const Case kCross = kCases[2];  // B=3, L=4, S=7, H=2, cross-attention

AttentionTrace run(const Case& c, Mistake m, uint32_t seed = 5u) {
  return runAttention(makeInputs(c, seed), makeOptions(c, m));
}

const Stage& stage(const AttentionTrace& t, const std::string& name) {
  for (const Stage& s : t.stages)
    if (s.name == name) return s;
  throw std::runtime_error("no stage " + name);
}

double maxAbsDiff(const Tensor& a, const Tensor& b) {
  double m = 0.0;
  for (size_t n = 0; n < a.data.size(); ++n) m = std::max(m, std::fabs(double(a.data[n]) - b.data[n]));
  return m;
}

TEST(Mistakes, NoneIsTheNormalPathBitwise) {
  for (const Case& c : kCases) {
    const AttentionInputs in = makeInputs(c, 11u);
    AttentionOptions plain;
    plain.heads = c.H;
    plain.mask = MaskSpec::parse(c.mask);
    plain.fill = c.fill;
    plain.scale_mode = c.scale;
    const AttentionTrace normal = runAttention(in, plain);
    const AttentionTrace none = runAttention(in, makeOptions(c, Mistake::None));
    EXPECT_EQ(none.raw_scores.data, normal.raw_scores.data) << c.name;
    EXPECT_EQ(none.probs.data, normal.probs.data) << c.name;
    EXPECT_EQ(none.context.data, normal.context.data) << c.name;
    EXPECT_EQ(none.output.data, normal.output.data) << c.name;
    EXPECT_EQ(none.mistake, Mistake::None);
    EXPECT_TRUE(none.mistake_note.empty());
    for (const Stage& s : none.stages) EXPECT_EQ(s.code.find("BUG"), std::string::npos) << s.code;
  }
}

TEST(Mistakes, FloorDivisionGivesIntegerScoresAndBlockyProbabilities) {
  const AttentionTrace t = run(kSelf, Mistake::FloorDivisionScale);
  const AttentionTrace right = run(kSelf, Mistake::None);
  int64_t distinct_steps = 0;
  for (size_t n = 0; n < t.scores.data.size(); ++n) {
    const float s = t.scores.data[n];
    if (std::isinf(s)) continue;
    ASSERT_EQ(s, std::floor(s)) << "score " << n << " is not a whole number";
    ASSERT_LE(s, right.scores.data[n] + 1e-5f) << "floor never rounds up";
    ASSERT_GT(s, right.scores.data[n] - 1.0f - 1e-5f);
    distinct_steps += s != t.scores.data[0];
  }
  EXPECT_GT(distinct_steps, 0) << "scores should span more than one integer";
  EXPECT_GT(maxAbsDiff(t.probs, right.probs), 1e-2);
  EXPECT_NE(stage(t, "scores").code.find("// math.sqrt(d)"), std::string::npos);
  EXPECT_NE(stage(t, "scores").code.find("BUG"), std::string::npos);
  // Python // semantics for negatives: -7.3 // 1 == -8. H = D = 4, so d = 1 and sqrt(d) = 1.
  AttentionInputs tiny;
  tiny.query = Tensor({1, 1, 1}, 1.0f);
  tiny.key = Tensor({1, 2, 1});
  tiny.key.data = {-7.3f, 7.3f};
  tiny.value = Tensor({1, 2, 1}, 1.0f);
  tiny.w_q = tiny.w_k = tiny.w_v = Tensor({4, 1}, 1.0f);
  tiny.w_o = Tensor({4, 4});
  AttentionOptions o;
  o.heads = 4;
  o.mistake = Mistake::FloorDivisionScale;
  const AttentionTrace small = runAttention(tiny, o);
  EXPECT_EQ(small.scores.data[0], -8.0f);
  EXPECT_EQ(small.scores.data[1], 7.0f);
}

TEST(Mistakes, KVReshapeWithQueryLengthWorksOnlyWhenSEqualsL) {
  const AttentionTrace right = run(kSelf, Mistake::None);
  const AttentionTrace t = run(kSelf, Mistake::KVReshapedWithQueryLength);
  EXPECT_EQ(t.probs.data, right.probs.data);
  EXPECT_EQ(t.output.data, right.output.data);
  EXPECT_NE(t.mistake_note.find("S == L"), std::string::npos) << t.mistake_note;
  EXPECT_NE(stage(t, "k_view").code.find("view(B, L, H, d)"), std::string::npos);
  EXPECT_NE(stage(t, "v_view").code.find("BUG"), std::string::npos);

  // B=3, L=4, S=7, D=10, H=2: k_proj(k) holds 3*7*10 = 210 values, view asks for [3, 4, 2, 5].
  const AttentionInputs in = makeInputs(kCross, 1u);
  try {
    runAttention(in, makeOptions(kCross, Mistake::KVReshapedWithQueryLength));
    FAIL() << "S != L must raise";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "RuntimeError: shape '[3, 4, 2, 5]' is invalid for input of size 210 "
                 "(seed 000 reshapes K/V with the query length; use S)");
  }
}

TEST(Mistakes, NoHeadSplitDrawsOneMapInEveryHead) {
  for (const Case& c : {kSelf, kCross}) {
    const AttentionTrace t = run(c, Mistake::NoHeadSplit);
    const AttentionTrace right = run(c, Mistake::None);
    const size_t map = static_cast<size_t>(c.L * c.S);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 1; h < c.H; ++h)
        for (size_t n = 0; n < map; ++n) {
          const size_t first = b * c.H * map + n, other = (b * c.H + h) * map + n;
          ASSERT_EQ(t.probs.data[other], t.probs.data[first]);
          ASSERT_EQ(t.scores.data[other], t.scores.data[first]);
        }
    // The correct heads differ from one another.
    double head_spread = 0.0;
    for (size_t n = 0; n < map; ++n) head_spread = std::max(head_spread, std::fabs(double(right.probs.data[n]) - right.probs.data[map + n]));
    EXPECT_GT(head_spread, 1e-2) << c.name;
    // context_heads is context [B, L, D] viewed as heads, so merging them gives context back.
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t i = 0; i < c.L; ++i)
          for (int64_t k = 0; k < t.d; ++k)
            ASSERT_EQ(t.context_heads.data[((b * c.H + h) * c.L + i) * t.d + k], t.context.data[(b * c.L + i) * c.D + h * t.d + k]);
    EXPECT_EQ(stage(t, "scores").shape, (Shape{c.B, c.L, c.S}));
    EXPECT_EQ(stage(t, "q_view").op, "skipped");
  }
  // With dropout the heads stay identical (one map, one dropout draw).
  AttentionOptions o = makeOptions(kSelf, Mistake::NoHeadSplit);
  o.train = true;
  o.dropout = 0.3f;
  o.seed = 9;
  const AttentionTrace t = runAttention(makeInputs(kSelf, 5u), o);
  const size_t map = static_cast<size_t>(kSelf.L * kSelf.S);
  for (size_t n = 0; n < map; ++n) ASSERT_EQ(t.probs_dropped.data[2 * map + n], t.probs_dropped.data[n]);
}

TEST(Mistakes, SharedLinearMakesSelfAttentionScoresSymmetric) {
  const AttentionTrace t = run(kSelf, Mistake::SharedProjection);
  const AttentionTrace right = run(kSelf, Mistake::None);
  const int64_t L = kSelf.L, S = kSelf.S;
  double right_asymmetry = 0.0;
  for (int64_t bh = 0; bh < kSelf.B * kSelf.H; ++bh)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) {
        const size_t ij = (bh * L + i) * S + j, ji = (bh * L + j) * S + i;
        ASSERT_NEAR(t.raw_scores.data[ij], t.raw_scores.data[ji], 1e-5 * std::max(1.0f, std::fabs(t.raw_scores.data[ij])));
        right_asymmetry = std::max(right_asymmetry, std::fabs(double(right.raw_scores.data[ij]) - right.raw_scores.data[ji]));
      }
  EXPECT_GT(right_asymmetry, 1e-2);
  EXPECT_EQ(t.q_proj.data, t.k_proj.data);  // one layer, one input
  EXPECT_NE(t.mistake_note.find("symmetric"), std::string::npos) << t.mistake_note;
  EXPECT_NE(stage(t, "k_proj").code.find("linears[1]"), std::string::npos);

  try {
    run(kCross, Mistake::SharedProjection);
    FAIL() << "Dq != D must raise";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "shared-linear: one nn.Linear(D, D) serves q, k, v and o, so query, key and value need D=10 "
                 "features each, got Dq=10, Dk=9, Dv=6");
  }
}

TEST(Mistakes, NoScaleIsScaleModeNoneWhateverTheScaleMode) {
  const Case c = kCases[8];  // custom scale
  const AttentionInputs in = makeInputs(c, 3u);
  AttentionOptions unscaled = makeOptions(c, Mistake::None);
  unscaled.scale_mode = ScaleMode::None;
  const AttentionTrace expected = runAttention(in, unscaled);
  for (ScaleMode mode : {ScaleMode::InvSqrtD, ScaleMode::Custom, ScaleMode::None}) {
    AttentionOptions o = makeOptions(c, Mistake::NoScaling);
    o.scale_mode = mode;
    o.custom_scale = 0.01f;
    const AttentionTrace t = runAttention(in, o);
    EXPECT_EQ(t.scale, 1.0f);
    EXPECT_EQ(t.scores.data, expected.scores.data);
    EXPECT_EQ(t.output.data, expected.output.data);
    EXPECT_NE(stage(t, "scores").code.find("no / math.sqrt(d)"), std::string::npos);
  }
}

TEST(Mistakes, ReshapeWithoutTransposeKeepsMapsButBreaksOutput) {
  for (const Case& c : {kSelf, kCross}) {
    const AttentionTrace t = run(c, Mistake::ReshapeWithoutTranspose);
    const AttentionTrace right = run(c, Mistake::None);
    EXPECT_EQ(t.probs.data, right.probs.data) << c.name;
    EXPECT_EQ(t.context_heads.data, right.context_heads.data) << c.name;
    EXPECT_EQ(t.context.data, t.context_heads.data) << "reshape keeps the flat order";
    EXPECT_GT(maxAbsDiff(t.output, right.output), 1e-2) << c.name;
    EXPECT_EQ(stage(t, "context_transpose").op, "skipped");
    EXPECT_NE(stage(t, "context_view").code.find("reshape(B, L, D)"), std::string::npos);
  }
}

TEST(Mistakes, MaskNotBroadcastUsesRowIndexAsBatchIndex) {
  const Case c = kCases[4];  // B = L = 3, S = 5, valid_lens {5, 2, 4}
  const AttentionTrace t = run(c, Mistake::MaskNotBroadcast);
  const AttentionTrace right = run(c, Mistake::None);
  int64_t wrong_rows = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t i = 0; i < c.L; ++i) {
      bool row_differs = false;
      for (int64_t j = 0; j < c.S; ++j) {
        const bool allowed = t.mask.allowed.data[(b * c.L + i) * c.S + j];
        ASSERT_EQ(allowed, j < c.valid_lens[i]) << "row i must use batch item i's valid length";
        row_differs = row_differs || allowed != bool(right.mask.allowed.data[(b * c.L + i) * c.S + j]);
      }
      wrong_rows += row_differs;
    }
  EXPECT_EQ(wrong_rows, 6);  // every (b, i) with b != i: the three lengths all differ
  EXPECT_EQ(t.mask.components.back().name, "padding (not broadcast)");
  EXPECT_NE(stage(t, "masked_scores").code.find("pad_mask[:, None, None, :]"), std::string::npos);
  EXPECT_NE(t.mistake_note.find("batch item i"), std::string::npos) << t.mistake_note;

  // B != L: torch cannot broadcast dimension 2 (L = 5 against B = 3).
  Case bad = c;
  bad.L = 5;
  try {
    run(bad, Mistake::MaskNotBroadcast);
    FAIL() << "B != L must raise";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "RuntimeError: The size of tensor a (5) must match the size of tensor b (3) at non-singleton "
                 "dimension 2 (seed 003: a [B, S] padding mask needs unsqueeze(1).unsqueeze(2) to [B, 1, 1, S])");
  }
  // L == 1 < B: torch silently broadcasts to [B, H, B, S]; refused with that explanation.
  bad.L = 1;
  try {
    run(bad, Mistake::MaskNotBroadcast);
    FAIL() << "L == 1 < B must raise";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("silently broadcasts to [3, 2, 3, 5]"), std::string::npos) << e.what();
  }
  // No padding mask: nothing to broadcast, no effect and no error even with B != L.
  const Case no_padding = kCases[9];  // B = 2, L = 5, causal only
  const AttentionTrace unaffected = run(no_padding, Mistake::MaskNotBroadcast);
  EXPECT_EQ(unaffected.probs.data, run(no_padding, Mistake::None).probs.data);
  EXPECT_NE(unaffected.mistake_note.find("no effect"), std::string::npos) << unaffected.mistake_note;
  // B == 1: [1, S] broadcasts as [1, 1, 1, S], which is right.
  const Case one = kCases[7];
  EXPECT_EQ(run(one, Mistake::MaskNotBroadcast).probs.data, run(one, Mistake::None).probs.data);
}

TEST(Mistakes, StageNamesStayTheSameForTheGui) {
  const AttentionTrace right = run(kSelf, Mistake::None);
  for (Mistake m : kAllMistakes) {
    const Case& c = m == Mistake::MaskNotBroadcast ? kCases[5] : kSelf;
    const AttentionTrace t = run(c, m);
    ASSERT_EQ(t.stages.size(), right.stages.size());
    bool marked = false;
    for (size_t n = 0; n < t.stages.size(); ++n) {
      EXPECT_EQ(t.stages[n].name, right.stages[n].name);
      marked = marked || t.stages[n].code.find("BUG") != std::string::npos;
    }
    EXPECT_EQ(marked, m != Mistake::None) << mistakeName(m);
  }
}

TEST(Mistakes, NamesDescriptionsAndFixes) {
  const std::vector<std::string> expected = {"none",          "floor-div-scale", "kv-reshape-with-L",
                                             "no-head-split", "shared-linear",   "no-scale",
                                             "no-contiguous", "mask-not-broadcast"};
  const std::vector<Mistake> all = allMistakes();
  ASSERT_EQ(all.size(), expected.size());
  for (size_t n = 0; n < all.size(); ++n) {
    EXPECT_EQ(all[n], kAllMistakes[n]);
    EXPECT_EQ(mistakeName(all[n]), expected[n]);
    EXPECT_EQ(mistakeNames().find(expected[n]), all[n]);
    const std::string description = mistakeDescription(all[n]);
    EXPECT_FALSE(description.empty());
    EXPECT_EQ(description.find('\n'), std::string::npos);
    EXPECT_EQ(std::string(mistakeFix(all[n])).empty(), all[n] == Mistake::None);
  }
  EXPECT_NE(std::string(mistakeDescription(Mistake::FloorDivisionScale)).find("seed 000"), std::string::npos);
  EXPECT_NE(std::string(mistakeFix(Mistake::SharedProjection)).find("nn.ModuleList"), std::string::npos);
  try {
    mistakeNames().parse("floor-div");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown mistake 'floor-div' (one of: none, floor-div-scale, kv-reshape-with-L, no-head-split, "
                 "shared-linear, no-scale, no-contiguous, mask-not-broadcast)");
  }
}

TEST(Mistakes, SettingsRoundTripAndOptions) {
  for (Mistake m : kAllMistakes) {
    Settings s;
    s.mistake = m;
    const nlohmann::json j = settingsToJson(s);
    EXPECT_EQ(j.at("mistake"), mistakeName(m));
    EXPECT_EQ(settingsFromJson(j).mistake, m);
    EXPECT_EQ(attentionOptions(s).mistake, m);
  }
  EXPECT_EQ(settingsFromJson(nlohmann::json::object()).mistake, Mistake::None);
  try {
    settingsFromJson(nlohmann::json{{"mistake", "typo"}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("settings: 'mistake' is invalid: unknown mistake 'typo'", 0), 0u) << e.what();
  }
  EXPECT_THROW(settingsFromJson(nlohmann::json{{"mistake", 3}}), InputError);
}

}  // namespace
}  // namespace attnscope
