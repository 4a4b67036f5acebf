#include "attention/variants.h"

#include <cmath>
#include <sstream>

#include "attention/attention.h"

namespace attnscope {
namespace {

std::string formatNumber(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// One registry row: the info plus when the options switch it on and what it checks.
struct VariantRow {
  VariantInfo info;
  bool (*active)(const AttentionOptions&, const VariantSizes&);
  void (*validate)(const AttentionOptions&, const VariantSizes&);
};

void noCheck(const AttentionOptions&, const VariantSizes&) {}

const VariantRow kVariants[] = {
      {{Variant::GroupedQuery, "gqa",
        "grouped-query attention: G K/V heads shared by H query heads (G = 1 is MQA, G = H is MHA)",
        "k = k.repeat_interleave(H // G, dim=1)  # repeat_kv: [B, G, S, d] -> [B, H, S, d]; likewise v"},
       [](const AttentionOptions&, const VariantSizes& n) { return n.G != n.H; },
       [](const AttentionOptions&, const VariantSizes& n) {
         if (n.G < 1 || n.H % n.G != 0)
           throw InputError("kv_heads G=" + std::to_string(n.G) + " does not divide H=" + std::to_string(n.H) +
                            " (each K/V head serves H/G query heads)");
       }},
      {{Variant::Rope, "rope",
        "rotary position embeddings on q and k after the head split (positions 0..L-1 and 0..S-1)",
        "q, k = apply_rotary_pos_emb(q, k, cos, sin)  # cos/sin of pos * base**(-2i/d)"},
       [](const AttentionOptions& o, const VariantSizes&) { return o.rope; },
       [](const AttentionOptions& o, const VariantSizes& n) {
         if (!o.rope) return;
         if (n.d % 2 != 0)
           throw InputError("RoPE needs an even head size d, got d=" + std::to_string(n.d) +
                            " (it rotates pairs of features)");
         if (!(o.rope_base > 1.0) || !std::isfinite(o.rope_base))
           throw InputError("RoPE base must be a finite number > 1, got " + formatNumber(o.rope_base));
         if (2 * static_cast<int64_t>(o.rope_inv_freq.size()) > n.d)
           throw InputError("RoPE inverse frequencies rotate " + std::to_string(2 * o.rope_inv_freq.size()) +
                            " features but the head size is d=" + std::to_string(n.d));
         for (double f : o.rope_inv_freq)
           if (!std::isfinite(f)) throw InputError("RoPE inverse frequencies must be finite, got " + formatNumber(f));
       }},
      {{Variant::SoftCap, "softcap", "logit soft-capping (Gemma 2): scaled scores squashed into (-cap, cap)",
        "scores = cap * torch.tanh(scores / cap)"},
       [](const AttentionOptions& o, const VariantSizes&) { return o.softcap.has_value(); },
       [](const AttentionOptions& o, const VariantSizes&) {
         if (o.softcap && !(*o.softcap > 0.0f && std::isfinite(*o.softcap)))
           throw InputError("soft-cap must be a finite number > 0, got " + formatNumber(*o.softcap));
       }},
      {{Variant::Alibi, "alibi",
        "ALiBi (Press et al., 2022): a linear distance penalty -m_h |i - j| per head, no position embeddings",
        "scores = scores + alibi  # alibi[h, i, j] = -m_h * |i - j|"},
       [](const AttentionOptions& o, const VariantSizes&) { return o.alibi; }, noCheck},
      {{Variant::Sinks, "sinks",
        "attention sinks (StreamingLLM): the first k keys stay visible beside a sliding window",
        "allowed = window | (j < k)  # sinks: the first k keys are never evicted"},
       [](const AttentionOptions& o, const VariantSizes&) { return o.mask.sinks >= 0; },
       [](const AttentionOptions& o, const VariantSizes&) { o.mask.checkSinks(); }},
};

// Rotation angles pos * inv_freq[i] as cos/sin tables [T, inv_freq.size()], in double
// (rows of positions before `first` are left unset).
void ropeTables(int64_t first, int64_t T, const std::vector<double>& inv_freq, std::vector<float>& cos_t,
                std::vector<float>& sin_t) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  cos_t.resize(T * half);
  sin_t.resize(T * half);
  for (int64_t i = 0; i < half; ++i) {
    for (int64_t t = first; t < T; ++t) {
      const double angle = static_cast<double>(t) * inv_freq[i];
      cos_t[t * half + i] = static_cast<float>(std::cos(angle));
      sin_t[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

// Rotates pair (a, b) of one vector by the angle with cosine c and sine s.
inline void rotatePair(float& a, float& b, float c, float s) {
  const float x = a, y = b;
  a = x * c - y * s;
  b = y * c + x * s;
}

// Feature index of pair i's first and second element.
inline int64_t pairFirst(int64_t i, RopeStyle style) {
  return style == RopeStyle::RotateHalf ? i : 2 * i;
}
inline int64_t pairSecond(int64_t i, int64_t d, RopeStyle style) {
  return style == RopeStyle::RotateHalf ? i + d / 2 : 2 * i + 1;
}

}  // namespace

const NameTable<RopeStyle>& ropeStyleNames() {
  struct Row {
    RopeStyle style;
    const char* name;
  };
  static constexpr Row kRopeStyles[] = {{RopeStyle::RotateHalf, "half"}, {RopeStyle::Interleaved, "interleaved"}};
  static const NameTable<RopeStyle> table("rope style", kRopeStyles, &Row::style, &Row::name);
  return table;
}

const char* ropeStyleName(RopeStyle style) { return ropeStyleNames().name(style); }

std::vector<VariantInfo> allVariants() {
  std::vector<VariantInfo> infos;
  for (const VariantRow& row : kVariants) infos.push_back(row.info);
  return infos;
}

const VariantInfo& variantInfo(Variant variant) {
  for (const VariantRow& row : kVariants)
    if (row.info.variant == variant) return row.info;
  return kVariants[0].info;
}

std::vector<Variant> activeVariants(const AttentionOptions& options, const VariantSizes& sizes) {
  std::vector<Variant> active;
  for (const VariantRow& row : kVariants)
    if (row.active(options, sizes)) active.push_back(row.info.variant);
  return active;
}

void validateVariants(const AttentionOptions& options, const VariantSizes& sizes) {
  for (const VariantRow& row : kVariants) row.validate(options, sizes);
}

std::vector<double> ropeInvFreq(int64_t d, double base, const std::vector<double>& inv_freq) {
  if (!inv_freq.empty()) return inv_freq;
  std::vector<double> out(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) out[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  return out;
}

void applyRope(Tensor& x, double base, RopeStyle style, const std::vector<double>& inv_freq) {
  applyRopeFrom(x, 0, base, style, inv_freq);
}

void applyRopeFrom(Tensor& x, int64_t first, double base, RopeStyle style, const std::vector<double>& inv_freq) {
  const int64_t N = x.dim(0) * x.dim(1), T = x.dim(2), d = x.dim(3);
  const std::vector<double> freq = ropeInvFreq(d, base, inv_freq);
  const int64_t half = static_cast<int64_t>(freq.size()), rotated = 2 * half;
  std::vector<float> cos_t, sin_t;
  ropeTables(first, T, freq, cos_t, sin_t);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = first; t < T; ++t) {
      float* v = &x.data[(n * T + t) * d];
      for (int64_t i = 0; i < half; ++i)
        rotatePair(v[pairFirst(i, style)], v[pairSecond(i, rotated, style)], cos_t[t * half + i], sin_t[t * half + i]);
    }
}

void rotateAt(float* x, int64_t d, int64_t pos, double base, RopeStyle style, const std::vector<double>& inv_freq) {
  const std::vector<double> freq = ropeInvFreq(d, base, inv_freq);
  const int64_t rotated = 2 * static_cast<int64_t>(freq.size());
  for (size_t i = 0; i < freq.size(); ++i) {
    const double angle = static_cast<double>(pos) * freq[i];
    rotatePair(x[pairFirst(i, style)], x[pairSecond(i, rotated, style)], static_cast<float>(std::cos(angle)),
               static_cast<float>(std::sin(angle)));
  }
}

std::vector<float> ropeScoreDecay(int64_t d, double base, RopeStyle style, int64_t max_distance) {
  // u = ones(d): every pair is (1, 1), so <R_m u, R_0 u> = sum over pairs of 2 cos(m theta_i),
  // whichever feature order the style uses; computed by rotation to stay one definition.
  std::vector<float> decay;
  if (d < 2 || max_distance < 0) return decay;
  Tensor u({1, 1, max_distance + 1, d});
  std::fill(u.data.begin(), u.data.end(), 1.0f);
  applyRope(u, base, style);
  for (int64_t m = 0; m <= max_distance; ++m) {
    double dot = 0.0;
    for (int64_t c = 0; c < d; ++c) dot += u.data[m * d + c];  // R_0 u = u = ones
    decay.push_back(static_cast<float>(dot / static_cast<double>(d)));
  }
  return decay;
}

std::vector<double> alibiSlopes(int64_t heads) {
  // get_slopes_power_of_2(n): start = 2^(-2^-(log2(n) - 3)), slopes start * start^i.
  auto power_of_2 = [](int64_t n) {
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3.0)));
    std::vector<double> slopes;
    for (int64_t i = 0; i < n; ++i) slopes.push_back(start * std::pow(start, static_cast<double>(i)));
    return slopes;
  };
  if (heads < 1) return {};
  int64_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  std::vector<double> slopes = power_of_2(closest);
  if (closest == heads) return slopes;
  // Not a power of two: the closest power's slopes, then every other slope of 2 * closest.
  const std::vector<double> extra = alibiSlopes(2 * closest);
  for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < heads; i += 2) slopes.push_back(extra[i]);
  return slopes;
}

}  // namespace attnscope
