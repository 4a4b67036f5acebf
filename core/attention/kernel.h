// The attention kernel, shared by the full trace (attention.cpp) and the tiled long-map
// path (tiles.cpp): GEMMs through OpenBLAS, the fused score pass per query row, and the
// per-head loop that streams row blocks so a block's scores are still in cache when its
// probabilities multiply V. Internal to core/attention.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "attention/attention.h"
#include "attention/mask.h"
#include "attention/row_gemm.h"
#include "attention/softmax_row.h"
#include "tensor/tensor.h"
#include "tensor/weights.h"

namespace attnscope {

// C [m, n] = A [m, k] B [k, n] (or A B^T with B [n, k] when trans_b) + beta C, row-major
// with leading dimensions. Inside an OpenMP parallel region OpenBLAS runs single-threaded.
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc);

// y [rows, D] = x [rows, Din] W^T + b, W [D, Din], b [D] or empty; a row's value does not
// depend on `rows` (attention/row_gemm.h).
void linearInto(const float* x, int64_t rows, const Tensor& w, const Tensor& b, float* y);
void linearInto(const float* x, int64_t rows, const Weights& w, const Tensor& b, float* y);  // float32 or bfloat16 W

// How q.k becomes a score. The one place where score transforms apply, in this order:
// scale, soft-cap, ALiBi bias, then the mask.
struct ScoreRule {
  float scale = 1.0f;         // factor on q.k
  float floor_div_by = 0.0f;  // > 0: floor(q.k / floor_div_by) instead (floor-div-scale mistake)
  float softcap = 0.0f;       // > 0: cap * tanh(s / cap) (Gemma 2)
  double alibi_slope = 0.0;   // > 0: s - slope * |i - j| (this head's m_h)
  MaskFill fill = MaskFill::NegInf;
  float fillValue() const;    // -inf or -1e9
  bool transformsScores() const { return floor_div_by > 0.0f || softcap > 0.0f || alibi_slope > 0.0; }
};

struct RunSizes {
  int64_t B, L, S, D, H, d, G, Dq, Dk, Dv;
};
// Checks shapes, weights (w_k/w_v [G*d, D*]), finite values, options and variants;
// InputError names the tensor.
RunSizes validateInputs(const AttentionInputs& in, const AttentionOptions& options);

// The pipeline's stages as the seeds write them, for a filled trace.
std::vector<Stage> buildStages(const AttentionTrace& t, const AttentionOptions& options);

// What the run does, mistakes lab included: each mistake's change is decided here.
struct RunPlan {
  ScoreRule rule;                  // head 0's; ruleForHead gives each head its ALiBi slope
  std::vector<double> alibi_slopes;  // [H] or empty (ALiBi off)
  bool shared_projection = false;  // w_q, b_q serve k, v and o too
  bool split_heads = true;         // false: one map over the full D, drawn in every head slot
  bool merge_transposed = true;    // false: context [B, H, L, d] reshaped as is
  ScoreRule ruleForHead(int64_t h) const {
    ScoreRule head = rule;
    if (!alibi_slopes.empty()) head.alibi_slope = alibi_slopes[h];
    return head;
  }
};
// Throws InputError for a mistake these sizes cannot run (as PyTorch would raise).
RunPlan planRun(const AttentionOptions& options, const RunSizes& sizes);

// allowed: [L, S] of one batch item -> [L] spans.
std::vector<RowSpan> rowSpans(const uint8_t* allowed, int64_t L, int64_t S);

// Query row i: raw [S] q.k valid in [span.begin, span.end) (may alias scores), allowed [S].
// Writes scores [S] (fill where masked) and probs [S] (0 where masked; a fully masked row
// gets 0 for the -inf fill and a uniform 1/S for -1e9, as masked_fill + softmax gives).
// Key j sits at position j (ALiBi's distance is |i - j|).
RowSoftmax scoreRow(const ScoreRule& rule, int64_t i, const float* raw, const uint8_t* allowed, RowSpan span,
                    int64_t S, float* scores, float* probs);

// Keep decision of dropout for flat map index n: a counter-based hash, so the result does
// not depend on which thread computes which head.
bool dropoutKeeps(uint64_t seed, uint64_t n, float p);

constexpr int64_t kRowBlock = 64;  // query rows per block: [64, S] scores stay in L2
inline int64_t rowBlocks(int64_t L) { return (L + kRowBlock - 1) / kRowBlock; }
constexpr int64_t kKeyTile = 64;   // keys per tile of Q K^T: the unit a raw score cache holds them in

// Q K^T (before scaling) of earlier runs on the same q and k, kept by AttentionWorkspace:
// laid out like the maps, with the keys each row block holds (only those are ever written).
struct RawScoreCache {
  std::unique_ptr<float[]> raw;  // [B, H, L, S]; never zero-filled: only held keys are read
  size_t size = 0;               // floats in raw
  std::vector<RowSpan> spans;    // [B, H, rowBlocks(L)]: keys of each block in raw, whole key tiles; {0, 0} = none
  Shape shape;                   // [B, H, L, S] it holds
  bool split_heads = true;       // false: the no-head-split mistake's full-D map (head 0 slots)
};

// One [L, S] attention map and its context rows. q [L, c], k [S, c], v [S, c] with leading
// dimension c; ctx [L, c] with leading dimension ld_ctx. raw and dropped may be null (not
// kept / no dropout). spans: [L] from rowSpans. With raw null, the GEMM only covers the
// keys some row of a block may attend (causal maps skip the masked half). With a cache,
// Q K^T comes from it where it holds the block's keys, and the GEMM writes into it.
struct HeadSlot {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t c = 0;
  const uint8_t* allowed = nullptr;  // [L, S]
  const RowSpan* spans = nullptr;    // [L]
  float* raw = nullptr;              // [L, S] or null
  float* cache = nullptr;            // [L, S] of a RawScoreCache (raw null), or null
  RowSpan* cached = nullptr;         // [rowBlocks(L)]: keys each block holds in cache
  float* scores = nullptr;           // [L, S], or null: not kept (with neither raw nor cache)
  float* probs = nullptr;            // [L, S]
  float* dropped = nullptr;          // [L, S] or null
  uint64_t dropout_offset = 0;       // flat index of this slot's first cell in [B, H, L, S]
  float* ctx = nullptr;
  int64_t ld_ctx = 0;
  RowSoftmax* normalisers = nullptr;  // [L] or null: each row's max and sum of exp, kept
  // Large maps (no raw or cache): each block's scores and probabilities are computed in a
  // scratch that stays in cache, then streamed into scores and probs.
  bool stream = false;
};
// Maps from which streaming pays: 1 MiB a head (smaller ones stay in cache for their readers).
inline bool streamedMaps(int64_t L, int64_t S) { return L * S >= (int64_t{1} << 18); }
struct DropoutRule {
  float p = 0.0f;
  uint64_t seed = 0;
};
// rule: this head's (RunPlan::ruleForHead). Query row i is at position i. Returns how its
// blocks got Q K^T.
RawScoreBlocks attendHead(const HeadSlot& slot, int64_t L, int64_t S, const ScoreRule& rule,
                          const DropoutRule& dropout);

}  // namespace attnscope
