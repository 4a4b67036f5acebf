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
  int64_t B = 0, L = 0, S = 0, D = 0, H = 0, d = 0;
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

// The mask rule of every term, straight from the spec text in core/mask.h.
inline bool referenceAllowed(const MaskSpec& m, const AttentionInputs& in, int64_t b, int64_t i,
                             int64_t j, int64_t L, int64_t S) {
  if (m.causal && j > i) return false;
  if (m.causal_bottom_right && j > i + S - L) return false;
  if (m.window >= 0 && std::llabs(i - j) > m.window) return false;
  if (m.causal_window >= 0 && (j > i || j < i - m.causal_window)) return false;
  if (m.prefix >= 0 && !(j < m.prefix || j <= i)) return false;
  if (!m.segments.empty() && referenceSegment(m.segments, i) != referenceSegment(m.segments, j)) return false;
  if (m.padding && !in.valid_lens.empty() && j >= in.valid_lens[b]) return false;
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

inline Reference referenceAttention(const AttentionInputs& in, const AttentionOptions& o,
                                    const std::vector<float>* probs_override = nullptr) {
  Reference r;
  const int64_t B = in.query.shape[0], L = in.query.shape[1], S = in.key.shape[1];
  const int64_t D = in.w_q.shape[0], H = o.heads, d = D / H;
  r.B = B, r.L = L, r.S = S, r.D = D, r.H = H, r.d = d;

  r.q_proj = referenceProject(in.query, in.w_q, in.b_q);
  const std::vector<double> kp = referenceProject(in.key, in.w_k, in.b_k);
  const std::vector<double> vp = referenceProject(in.value, in.w_v, in.b_v);

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
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c) dot += r.q_proj[(b * L + i) * D + h * d + c] * kp[(b * S + j) * D + h * d + c];
          srow[j] = r.allowed[(b * L + i) * S + j] ? dot * scale : fill;
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
          for (int64_t j = 0; j < S; ++j) acc += (pover ? pover[j] : prow[j]) * vp[(b * S + j) * D + h * d + c];
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

// Seeded boolean mask, each element true with probability p_true.
inline BoolTensor randomBools(Shape shape, std::mt19937& rng, double p_true) {
  BoolTensor t(std::move(shape));
  std::bernoulli_distribution coin(p_true);
  for (auto& v : t.data) v = coin(rng);
  return t;
}

// Absolute tolerance for values near 1, relative for large ones.
inline double tolerance(double reference, double tol = 1e-5) {
  return tol * std::max(1.0, std::fabs(reference));
}

}  // namespace attnscope::testing
