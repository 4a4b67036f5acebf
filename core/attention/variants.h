// The attention variants of today's models, as one registry: grouped-query / multi-query
// attention, rotary position embeddings, ALiBi, logit soft-capping and attention sinks.
// Each is a setting in AttentionOptions (sinks: a term of MaskSpec) and one row of the
// table in variants.cpp (name, description, the PyTorch / Hugging Face reference line the
// pipeline shows, validation).
//
// Order on the scores of one row: scale, then soft-cap, then ALiBi bias, then mask; the
// kernel's scoreRow (attention/kernel.h) applies them in that order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/name_table.h"
#include "tensor/tensor.h"

namespace attnscope {

struct AttentionOptions;

enum class Variant { GroupedQuery, Rope, Alibi, SoftCap, Sinks };

enum class RopeStyle {
  RotateHalf,   // LLaMA / Hugging Face: pairs (i, i + d/2)
  Interleaved,  // GPT-J (rotate_every_two) and the RoFormer paper: pairs (2i, 2i + 1)
};

const NameTable<RopeStyle>& ropeStyleNames();  // "half", "interleaved"
const char* ropeStyleName(RopeStyle style);    // ropeStyleNames().name(style)

// Sizes a variant's validation needs: H query heads of size d, G K/V heads.
struct VariantSizes {
  int64_t H = 1, G = 1, d = 1, L = 1, S = 1;
};

struct VariantInfo {
  Variant variant;
  const char* name;         // "gqa", "rope", "alibi", "softcap", "sinks"
  const char* description;  // one line for tooltips and --help
  const char* reference;    // the PyTorch / HF line that performs it (pipeline panel)
};

std::vector<VariantInfo> allVariants();  // in registry order
const VariantInfo& variantInfo(Variant variant);
// The variants these options switch on (GQA when G < H), in registry order.
std::vector<Variant> activeVariants(const AttentionOptions& options, const VariantSizes& sizes);
// Throws InputError with one line for the first invalid variant setting.
void validateVariants(const AttentionOptions& options, const VariantSizes& sizes);

// ---- GQA / MQA ----
// K/V head used by query head h: h / (H / G) (torch.repeat_interleave(H // G, dim=1)).
inline int64_t kvHeadOf(int64_t h, int64_t H, int64_t G) { return h / (H / G); }

// ---- RoPE ----
// The inverse frequencies [r/2] RoPE rotates with: inv_freq when given (scaled RoPE, partial
// rotary: only the first r = 2 * inv_freq.size() features rotate), else base^(-2i/d), i < d/2.
std::vector<double> ropeInvFreq(int64_t d, double base, const std::vector<double>& inv_freq = {});
// Rotates x: [N, heads, T, d] in place at positions 0..T-1 with ropeInvFreq(d, base, inv_freq);
// pairs (i, i + r/2) (RotateHalf) or (2i, 2i + 1) (Interleaved) of the first r features.
// Angles and their sines are computed in double (positions past 1000 keep full float precision).
void applyRope(Tensor& x, double base, RopeStyle style, const std::vector<double>& inv_freq = {});
// The same for positions [first, T) only (a cache's new rows; earlier rows are left alone).
void applyRopeFrom(Tensor& x, int64_t first, double base, RopeStyle style, const std::vector<double>& inv_freq = {});
// Rotates one head vector x[0..d) at position pos (a KV cache rotates each key once, when
// it enters the cache).
void rotateAt(float* x, int64_t d, int64_t pos, double base, RopeStyle style, const std::vector<double>& inv_freq = {});
// Score <R_m u, R_0 u> / d for u = ones(d), m = 0..max_distance: how RoPE makes the score
// between two fixed vectors decay with relative distance (RoFormer, section 3.4.3).
std::vector<float> ropeScoreDecay(int64_t d, double base, RopeStyle style, int64_t max_distance);

// ---- ALiBi ----
// Slopes m_h of Press et al.'s reference get_slopes(n), including n not a power of two.
std::vector<double> alibiSlopes(int64_t heads);

}  // namespace attnscope
