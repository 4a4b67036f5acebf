// Independent float64 reference for multi-head attention, written with plain loops and
// its own mask predicates (it does not call buildMasks or any core maths). Shapes follow
// core/attention.h; every array here is row-major double.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "attention/attention.h"

namespace attnscope::testing {

struct Reference {
  int64_t B = 0, L = 0, S = 0, D = 0, H = 0, d = 0, G = 0;
  std::vector<uint8_t> allowed;      // [B, L, S]
  std::vector<uint8_t> fully_masked; // [B, L]
  std::vector<double> q_proj;        // [B, L, D]
  std::vector<double> scores;        // [B, H, L, S] scaled, masked = fill
  std::vector<double> probs;         // [B, H, L, S]
  std::vector<double> context;       // [B, L, D]
  std::vector<double> output;        // [B, L, D]
};

// Segment id of position p for lengths n1, n2, ...; positions past the sum share one id.
inline int64_t referenceSegment(const std::vector<int64_t>& lengths, int64_t p) {
  int64_t end = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    end += lengths[s];
    if (p < end) return static_cast<int64_t>(s);
  }
  return static_cast<int64_t>(lengths.size());
}

// The mask rule of every term, straight from the spec text in core/mask.h: one row per term
// name, written here without the core's table (mask_test checks that every kind of term the
// core has, maskTermKinds(), has a row here).
struct ReferenceTerm {
  const char* name;
  bool (*on)(const MaskSpec& m);
  bool (*allowed)(const MaskSpec& m, const AttentionInputs& in, int64_t b, int64_t i, int64_t j, int64_t L, int64_t S);
};

inline bool referenceSink(const MaskSpec& m, int64_t j) { return m.sinks >= 0 && j < m.sinks; }  // StreamingLLM

inline const std::vector<ReferenceTerm>& referenceTerms() {
  static const std::vector<ReferenceTerm> terms = {
      {"causal", [](const MaskSpec& m) { return m.causal; },
       [](const MaskSpec&, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t, int64_t) { return j <= i; }},
      {"causal-br", [](const MaskSpec& m) { return m.causal_bottom_right; },
       [](const MaskSpec&, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t L, int64_t S) {
         return j <= i + S - L;
       }},
      {"window", [](const MaskSpec& m) { return m.window >= 0; },
       [](const MaskSpec& m, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t, int64_t) {
         return std::llabs(i - j) <= m.window || referenceSink(m, j);
       }},
      {"causal-window", [](const MaskSpec& m) { return m.causal_window >= 0; },
       [](const MaskSpec& m, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t, int64_t) {
         return j <= i && (j >= i - m.causal_window || referenceSink(m, j));
       }},
      // Sinks block nothing themselves: they keep keys visible through the window terms.
      {"sinks", [](const MaskSpec& m) { return m.sinks >= 0; },
       [](const MaskSpec&, const AttentionInputs&, int64_t, int64_t, int64_t, int64_t, int64_t) { return true; }},
      {"prefix", [](const MaskSpec& m) { return m.prefix >= 0; },
       [](const MaskSpec& m, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t, int64_t) {
         return j < m.prefix || j <= i;
       }},
      {"segments", [](const MaskSpec& m) { return !m.segments.empty(); },
       [](const MaskSpec& m, const AttentionInputs&, int64_t, int64_t i, int64_t j, int64_t, int64_t) {
         return referenceSegment(m.segments, i) == referenceSegment(m.segments, j);
       }},
      // With key_padding instead of valid_lens, the key_padding rule below applies.
      {"padding", [](const MaskSpec& m) { return m.padding; },
       [](const MaskSpec&, const AttentionInputs& in, int64_t b, int64_t, int64_t j, int64_t, int64_t) {
         return in.valid_lens.empty() || j < in.valid_lens[b];
       }},
  };
  return terms;
}

inline bool referenceAllowed(const MaskSpec& m, const AttentionInputs& in, int64_t b, int64_t i,
                             int64_t j, int64_t L, int64_t S) {
  for (const ReferenceTerm& term : referenceTerms())
    if (term.on(m) && !term.allowed(m, in, b, i, j, L, S)) return false;
  if (!in.key_padding.empty() && !in.key_padding.data[b * S + j]) return false;
  if (!in.attn_mask.empty()) {
    const size_t at = in.attn_mask.shape.size() == 2 ? i * S + j : (b * L + i) * S + j;
    if (!in.attn_mask.data[at]) return false;
  }
  return true;
}

// Linear projection y = x w^T + bias. x: [B, T, Din], w: [D, Din], bias: [D] or empty;
// returns [B, T, D].
inline std::vector<double> referenceProject(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t Din = x.shape.back(), D = w.shape[0];
  const int64_t rows = static_cast<int64_t>(x.data.size()) / Din;
  std::vector<double> y(rows * D);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t o = 0; o < D; ++o) {
      double acc = bias.empty() ? 0.0 : bias.data[o];
      for (int64_t c = 0; c < Din; ++c) acc += double(x.data[n * Din + c]) * w.data[o * Din + c];
      y[n * D + o] = acc;
    }
  return y;
}

// ALiBi slopes as Press et al.'s get_slopes(n): for a power of two, start = 2^(-8/n) and
// slope_h = start^(h+1); otherwise the closest power's slopes, then every other slope of
// twice that power.
inline std::vector<double> referenceAlibiSlopes(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  std::vector<double> slopes;
  for (int64_t h = 0; h < p; ++h) slopes.push_back(std::pow(2.0, -8.0 * double(h + 1) / double(p)));
  for (int64_t h = 0; int64_t(slopes.size()) < n; h += 2) slopes.push_back(std::pow(2.0, -8.0 * double(h + 1) / double(2 * p)));
  return slopes;
}

// RoPE on one head vector x[0..d) at position pos, in double. Rotate-half pairs feature c
// with c + d/2; interleaved pairs 2c with 2c + 1; pair c turns by pos * base^(-2c/d).
inline void referenceRope(double* x, int64_t d, int64_t pos, double base, RopeStyle style) {
  for (int64_t c = 0; c < d / 2; ++c) {
    const double theta = double(pos) * std::pow(base, -2.0 * double(c) / double(d));
    const int64_t a = style == RopeStyle::RotateHalf ? c : 2 * c;
    const int64_t b = style == RopeStyle::RotateHalf ? c + d / 2 : 2 * c + 1;
    const double xa = x[a], xb = x[b];
    x[a] = xa * std::cos(theta) - xb * std::sin(theta);
    x[b] = xb * std::cos(theta) + xa * std::sin(theta);
  }
}

inline Reference referenceAttention(const AttentionInputs& in, const AttentionOptions& o,
                                    const FloatBuffer* probs_override = nullptr) {
  Reference r;
  const int64_t B = in.query.shape[0], L = in.query.shape[1], S = in.key.shape[1];
  const int64_t D = in.w_q.shape[0], H = o.heads, d = D / H;
  const int64_t G = in.w_k.shape[0] / d, GD = G * d;  // K/V heads: w_k is [G*d, Dk]
  r.B = B, r.L = L, r.S = S, r.D = D, r.H = H, r.d = d, r.G = G;

  r.q_proj = referenceProject(in.query, in.w_q, in.b_q);
  std::vector<double> kp = referenceProject(in.key, in.w_k, in.b_k);  // [B, S, G*d]
  const std::vector<double> vp = referenceProject(in.value, in.w_v, in.b_v);
  std::vector<double> qr = r.q_proj;  // q and k after RoPE (when on)
  if (o.rope) {
    for (int64_t n = 0; n < B * L; ++n)
      for (int64_t h = 0; h < H; ++h) referenceRope(&qr[n * D + h * d], d, n % L, o.rope_base, o.rope_style);
    for (int64_t n = 0; n < B * S; ++n)
      for (int64_t g = 0; g < G; ++g) referenceRope(&kp[n * GD + g * d], d, n % S, o.rope_base, o.rope_style);
  }
  const std::vector<double> slopes = o.alibi ? referenceAlibiSlopes(H) : std::vector<double>(H, 0.0);

  double scale = 1.0;
  if (o.scale_mode == ScaleMode::InvSqrtD) scale = 1.0 / std::sqrt(double(d));
  if (o.scale_mode == ScaleMode::Custom) scale = o.custom_scale;
  const double fill = o.fill == MaskFill::NegInf ? -std::numeric_limits<double>::infinity() : -1e9;

  r.allowed.resize(B * L * S);
  r.fully_masked.assign(B * L, 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) {
        const bool a = referenceAllowed(o.mask, in, b, i, j, L, S);
        r.allowed[(b * L + i) * S + j] = a;
        if (a) r.fully_masked[b * L + i] = 0;
      }

  r.scores.resize(B * H * L * S);
  r.probs.resize(B * H * L * S);
  r.context.assign(B * L * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        double* srow = &r.scores[((b * H + h) * L + i) * S];
        double* prow = &r.probs[((b * H + h) * L + i) * S];
        const int64_t g = h / (H / G);  // the K/V head shared by this query head's group
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c) dot += qr[(b * L + i) * D + h * d + c] * kp[(b * S + j) * GD + g * d + c];
          double s = dot * scale;
          if (o.softcap) s = double(*o.softcap) * std::tanh(s / double(*o.softcap));
          s -= slopes[h] * double(std::llabs(i - j));
          srow[j] = r.allowed[(b * L + i) * S + j] ? s : fill;
        }
        if (r.fully_masked[b * L + i] && o.fill == MaskFill::NegInf) {
          for (int64_t j = 0; j < S; ++j) prow[j] = 0.0;  // defined as 0 (PyTorch: NaN)
        } else {
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < S; ++j) mx = std::max(mx, srow[j]);
          double sum = 0.0;
          for (int64_t j = 0; j < S; ++j) sum += prow[j] = std::exp(srow[j] - mx);
          for (int64_t j = 0; j < S; ++j) prow[j] /= sum;
        }
        const float* pover = probs_override ? &(*probs_override)[((b * H + h) * L + i) * S] : nullptr;
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0.0;
          for (int64_t j = 0; j < S; ++j) acc += (pover ? pover[j] : prow[j]) * vp[(b * S + j) * GD + g * d + c];
          r.context[(b * L + i) * D + h * d + c] = acc;
        }
      }
  r.output.resize(B * L * D);
  for (int64_t n = 0; n < B * L; ++n)
    for (int64_t o_ = 0; o_ < D; ++o_) {
      double acc = in.b_o.empty() ? 0.0 : in.b_o.data[o_];
      for (int64_t c = 0; c < D; ++c) acc += r.context[n * D + c] * in.w_o.data[o_ * D + c];
      r.output[n * D + o_] = acc;
    }
  return r;
}

// Seeded test tensors.
inline Tensor randomNormal(Shape shape, std::mt19937& rng, double sd = 1.0) {
  Tensor t(std::move(shape));
  std::normal_distribution<double> dist(0.0, sd);
  for (float& x : t.data) x = static_cast<float>(dist(rng));
  return t;
}

inline Tensor randomUniform(Shape shape, std::mt19937& rng, double bound) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<double> dist(-bound, bound);
  for (float& x : t.data) x = static_cast<float>(dist(rng));
  return t;
}

// Sizes of seeded test inputs: query [B, L, Dq], key [B, S, Dk], value [B, S, Dv],
// projections to D features.
struct InputSizes {
  int64_t B, L, S, Dq, Dk, Dv, D;
};

// Seeded inputs: key = value = query when self (needs L == S, Dq == Dk == Dv); weights
// w_q, w_k, w_v [D, Din], w_o [D, D] uniform in +-1/sqrt(fan_in), w_q and w_k times qk_gain;
// biases [D] normal(0, bias_sd), left empty when bias_sd is 0.
inline AttentionInputs randomInputs(const InputSizes& n, std::mt19937& rng, bool self, double bias_sd,
                                    double qk_gain = 1.0) {
  AttentionInputs in;
  in.query = randomNormal({n.B, n.L, n.Dq}, rng);
  if (self) {
    in.key = in.value = in.query;
  } else {
    in.key = randomNormal({n.B, n.S, n.Dk}, rng);
    in.value = randomNormal({n.B, n.S, n.Dv}, rng);
  }
  in.w_q = randomUniform({n.D, n.Dq}, rng, qk_gain / std::sqrt(double(n.Dq)));
  in.w_k = randomUniform({n.D, n.Dk}, rng, qk_gain / std::sqrt(double(n.Dk)));
  in.w_v = randomUniform({n.D, n.Dv}, rng, 1.0 / std::sqrt(double(n.Dv)));
  in.w_o = randomUniform({n.D, n.D}, rng, 1.0 / std::sqrt(double(n.D)));
  if (bias_sd > 0.0) {
    in.b_q = randomNormal({n.D}, rng, bias_sd);
    in.b_k = randomNormal({n.D}, rng, bias_sd);
    in.b_v = randomNormal({n.D}, rng, bias_sd);
    in.b_o = randomNormal({n.D}, rng, bias_sd);
  }
  return in;
}

// Grouped-query inputs from MHA ones: w_k/w_v keep their first G*d rows, b_k/b_v too.
inline void keepKeyValueRows(AttentionInputs& in, int64_t rows) {
  for (Tensor* w : {&in.w_k, &in.w_v}) {
    w->data.resize(rows * w->shape[1]);
    w->shape[0] = rows;
  }
  for (Tensor* b : {&in.b_k, &in.b_v}) {
    if (b->empty()) continue;
    b->data.resize(rows);
    b->shape[0] = rows;
  }
}

// Seeded boolean mask, each element true with probability p_true.
inline BoolTensor randomBools(Shape shape, std::mt19937& rng, double p_true) {
  BoolTensor t(std::move(shape));
  std::bernoulli_distribution coin(p_true);
  for (auto& v : t.data) v = coin(rng);
  return t;
}

// Inputs and options of a table case that sweeps the mask kinds and variants (tiles_test,
// tiled_metrics_test): any struct with the fields B, L, S, D, H, self, mask, fill,
// valid_lens, key_padding, attn_mask, G (> 0: K/V heads), rope, alibi, softcap.
template <typename Case>
AttentionInputs maskedCaseInputs(const Case& c, std::mt19937& rng, double qk_gain) {
  AttentionInputs in = randomInputs({c.B, c.L, c.S, c.D, c.D, c.D, c.D}, rng, c.self, 0.5, qk_gain);
  in.valid_lens = c.valid_lens;
  if (c.key_padding) in.key_padding = randomBools({c.B, c.S}, rng, 0.6);
  if (c.attn_mask) in.attn_mask = randomBools({c.B, c.L, c.S}, rng, 0.5);
  if (c.G > 0) keepKeyValueRows(in, c.G * (c.D / c.H));
  return in;
}

template <typename Case>
AttentionOptions maskedCaseOptions(const Case& c) {
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse(c.mask);
  o.fill = c.fill;
  o.rope = c.rope;
  o.alibi = c.alibi;
  if (c.softcap > 0.0f) o.softcap = c.softcap;
  return o;
}

// Absolute tolerance for values near 1, relative for large ones.
inline double tolerance(double reference, double tol = 1e-5) {
  return tol * std::max(1.0, std::fabs(reference));
}

}  // namespace attnscope::testing
