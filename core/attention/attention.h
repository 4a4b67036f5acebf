// Multi-head attention on the CPU, PyTorch convention (nn.Linear: y = x W^T + b),
// returning a trace of every stage so that callers never redo any maths.
//
// Sizes: B batch, L query length, S key/value length, D model size, H heads,
// d = D / H per-head size (d_k = d_v = d), Dq/Dk/Dv input feature sizes, G K/V heads
// (grouped-query attention; G = H unless w_k/w_v are [G*d, Dk]/[G*d, Dv]).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/mask.h"
#include "attention/mistakes.h"
#include "attention/softmax_row.h"
#include "attention/variants.h"
#include "tensor/tensor.h"

namespace attnscope {

enum class ScaleMode {
  InvSqrtD,  // scores * 1/sqrt(d)   (true division; never floor division, see seed 000)
  None,      // no scaling (teaching: shows why softmax saturates)
  Custom,    // scores * custom_scale
};

struct AttentionOptions {
  int64_t heads = 1;                   // H; D % H must be 0
  ScaleMode scale_mode = ScaleMode::InvSqrtD;
  float custom_scale = 1.0f;           // used when scale_mode == Custom
  MaskSpec mask;
  MaskFill fill = MaskFill::NegInf;
  float dropout = 0.0f;                // p in [0, 1); only applied when train
  bool train = false;
  uint64_t seed = 0;                   // dropout seed
  Mistake mistake = Mistake::None;     // run the pipeline wrong on purpose (mistakes lab)
  // Keep the maps (scores, probs, mask) of a cached-rows run (attention/cached_rows.h). false:
  // a model run beyond the full path's budget keeps Q, K and each row's softmax normalisers
  // instead (AttentionTrace::normalisers), from which attention/tiles.h computes any window.
  bool keep_maps = true;
  // With keep_maps: keep the score maps too. false: only the probabilities (a generation's
  // runs: its rows are probabilities, and the scores would double the maps' memory).
  bool keep_scores = true;
  // Keep raw_scores [B, H, L, S]. They can be derived (rawScore()), so the app and the
  // bench leave them out: one map less to write and hold, and masked blocks are skipped.
  bool keep_raw_scores = true;

  // Variants (attention/variants.h; sinks are the mask term mask.sinks).
  int64_t kv_heads = 0;                // G, must divide H; 0 = from w_k: its rows / d
  bool rope = false;                   // rotary embeddings on q and k after the head split
  double rope_base = 10000.0;
  RopeStyle rope_style = RopeStyle::RotateHalf;
  // [r/2] when set, replaces base^(-2i/d): scaled RoPE (linear, llama3) and partial rotary
  // (GPT-NeoX: only the first r features of each head rotate). Empty = every feature.
  std::vector<double> rope_inv_freq;
  // cos and sin times this, i.e. the rotated features of q and k scaled after the rotation
  // (longrope's attention_factor). Model runs only (cached_rows.h).
  double rope_attention_factor = 1.0;
  bool alibi = false;                  // -m_h |i - j| on the scaled (and soft-capped) scores
  std::optional<float> softcap;        // cap * tanh(s / cap) on the scaled scores; cap > 0
  // Per-head RMSNorm of q and k after the head split, before RoPE (Qwen3's q_norm, k_norm):
  // x / sqrt(mean(x^2) + eps) * w over each head's d features; weights [d] each, the model's
  // own (not copied, they must outlive the run); null = none. Model runs only (cached_rows.h).
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  double qk_norm_eps = 1e-6;
  // The q/k norms over each position's whole projection before the head split instead (OLMo 2:
  // q_norm [H*d], k_norm [G*d]).
  bool qk_norm_whole = false;
};

struct AttentionInputs {
  Tensor query;  // [B, L, Dq]
  Tensor key;    // [B, S, Dk]
  Tensor value;  // [B, S, Dv]
  Tensor w_q;    // [D, Dq]
  Tensor w_k;    // [D, Dk], or [G*d, Dk] for grouped-query attention
  Tensor w_v;    // [D, Dv], or [G*d, Dv]
  Tensor w_o;    // [D, D], or [Do, D] into a Do-wide output (heads x d != model width)
  Tensor b_q, b_k, b_v, b_o;      // [D] each ([G*d] for b_k, b_v), or empty = no bias
  BoolTensor attn_mask;           // [L, S] or [B, L, S], 1 = may attend; empty = none
  BoolTensor key_padding;         // [B, S], 1 = real token; empty = none
  std::vector<int64_t> valid_lens;  // [B] (d2l valid_lens); empty = none
  std::vector<std::string> query_tokens;  // L labels (may be empty)
  std::vector<std::string> key_tokens;    // S labels (may be empty)
  // Per batch item labels (text input with several lines): [B][L] and [B][S]; empty =
  // query_tokens / key_tokens apply to every batch item.
  std::vector<std::vector<std::string>> batch_query_tokens;
  std::vector<std::vector<std::string>> batch_key_tokens;
};

// One step of the pipeline as the seeds write it.
struct Stage {
  std::string name;   // "q_proj", "q_view", "scores", ...
  std::string op;     // "linear", "view", "transpose(1,2)", "matmul", "softmax", ...
  std::string code;   // the PyTorch line that performs it
  Shape shape;        // output shape of the stage
};

struct AttentionTrace {
  int64_t B = 0, L = 0, S = 0, D = 0, H = 0, d = 0, Dq = 0, Dk = 0, Dv = 0;
  int64_t G = 0;                     // K/V heads; query head h reads K/V head kvHeadOf(h, H, G)
  std::vector<Variant> variants;     // the active variants, in registry order
  std::vector<double> alibi_slopes;  // [H] when ALiBi is on, else empty
  float scale = 1.0f;       // factor applied to Q K^T
  MaskFill fill = MaskFill::NegInf;
  bool dropout_applied = false;
  // Mistakes lab: which mistake produced this trace; the affected Stage::code lines show
  // the buggy line (marked "BUG"), and the note says what it did to these inputs.
  Mistake mistake = Mistake::None;
  std::string mistake_note;  // one line, empty for Mistake::None

  // A model layer's trace (attention/cached_rows.h) leaves key, value (= query), q_proj,
  // k_proj, v_proj and context empty: q, k, v and context_heads hold the same values.
  Tensor query;             // [B, L, Dq] input
  Tensor key;               // [B, S, Dk] input
  Tensor value;             // [B, S, Dv] input
  Tensor q_proj;            // [B, L, D] = query W_q^T + b_q
  Tensor k_proj;            // [B, S, G*d]
  Tensor v_proj;            // [B, S, G*d]
  Tensor q;                 // [B, H, L, d] after view + transpose(1,2) (+ RoPE when on)
  Tensor k;                 // [B, G, S, d] (+ RoPE); never repeated to H heads (a cache holds this)
  Tensor v;                 // [B, G, S, d]
  Tensor raw_scores;        // [B, H, L, S] = Q K^T, before scaling; empty unless keep_raw_scores
  Tensor scores;            // [B, H, L, S] scaled, soft-capped, ALiBi; masked entries = fill
  Tensor probs;             // [B, H, L, S] softmax over S; masked entries exactly 0
  Tensor probs_dropped;     // [B, H, L, S] after dropout; empty when no dropout ran (it
                            // would be a copy of probs: a gigabyte at L = S = 4096, H = 16)
  Tensor context_heads;     // [B, H, L, d] = probsAfterDropout() V
  Tensor context;           // [B, L, D] after transpose(1,2) + view (heads concatenated)
  Tensor output;            // [B, L, Do] = context W_o^T + b_o (Do = D unless w_o is [Do, D])
  MaskSet mask;             // allowed [B, L, S] + components
  BoolTensor fully_masked;  // [B, L], 1 = every key of that query row is masked
  // [B, H, L] each query row's softmax normalisers (largest allowed score, sum of exp) when
  // the maps were not kept (AttentionOptions::keep_maps false: scores, probs, mask empty).
  std::vector<RowSoftmax> normalisers;
  std::vector<Stage> stages;  // in pipeline order
  std::vector<std::string> query_tokens;  // L labels ("0".."L-1" when none given)
  std::vector<std::string> key_tokens;    // S labels
  std::vector<std::vector<std::string>> batch_query_tokens;  // [B][L], copied from inputs (may be empty)
  std::vector<std::vector<std::string>> batch_key_tokens;    // [B][S], copied from inputs (may be empty)

  // [B, H, L, S]: the probabilities that multiply V (after dropout when it ran).
  const Tensor& probsAfterDropout() const { return dropout_applied ? probs_dropped : probs; }
};

// Elementwise |a - b| for two tensors of one shape, e.g. the mistakes lab's buggy and
// correct probabilities [B, H, L, S]. Throws InputError naming both shapes when they differ.
Tensor absDifference(const Tensor& a, const Tensor& b);

// Bytes the trace for these sizes will hold (for refusing jobs that exceed memory).
// The [B, H, L, S] tensors dominate, so pass the real H (the default 1 underestimates).
uint64_t estimateTraceBytes(int64_t B, int64_t L, int64_t S, int64_t D, int64_t Dq, int64_t Dk,
                            int64_t Dv, int64_t H = 1);
// Compare it with the budget through checkMemory (tensor/memory.h).

// Validates shapes (D % H, L_K == L_V, weight shapes, finite values, mask shapes) with
// InputError messages naming the tensor, then computes every stage. Heads run in parallel.
AttentionTrace runAttention(const AttentionInputs& inputs, const AttentionOptions& options);

// Q K^T at one cell (before scaling, masked or not): from raw_scores when kept, else
// derived from q and k.
float rawScore(const AttentionTrace& trace, int64_t b, int64_t h, int64_t i, int64_t j);

// How a run got Q K^T, counted in 64-row blocks of every [L, S] map it computed (a block
// whose rows are all fully masked needs no keys and is not counted).
struct RawScoreBlocks {
  int64_t cached = 0;    // every key the block needs was in the raw score cache: no GEMM
  int64_t extended = 0;  // the mask allows keys the cache lacks: a GEMM over those keys only
  int64_t computed = 0;  // nothing usable cached (or no cache): a GEMM over the block's keys
};

struct RawScoreCache;  // attention/kernel.h

// Runs attention into reused buffers: a trace that nobody else holds any more is
// overwritten, so a recompute of the same sizes writes into memory that is already mapped
// (no zero fill, no page faults). When only the mask, fill, scale, score transforms (ALiBi,
// soft-cap, the floor-div and no-scale mistakes) or dropout changed, the projections of the
// previous run are reused (unless `incremental` is false, as when timing a full recompute).
// With raw_cache_bytes >= B*H*L*S*4 (and keep_raw_scores off) the workspace also keeps the
// raw scores Q K^T it computed, per 64-row block with the keys each block holds: a run on
// reused projections scores a block from them when its keys lie inside, and computes only
// the missing keys when the mask allows more. Anything else (other projections, no head
// split toggled, a run without the cache) drops them. One workspace per worker thread.
class AttentionWorkspace {
 public:
  AttentionWorkspace();
  ~AttentionWorkspace();
  AttentionWorkspace(AttentionWorkspace&&) noexcept;
  AttentionWorkspace& operator=(AttentionWorkspace&&) noexcept;

  std::shared_ptr<const AttentionTrace> run(const AttentionInputs& inputs, const AttentionOptions& options,
                                            bool incremental = true, uint64_t raw_cache_bytes = 0);
  // By the last run():
  bool projectionsReused() const { return projections_reused_; }
  // Every block's raw scores came from the cache (no Q K^T GEMM ran).
  bool rawScoresReused() const { return raw_blocks_.cached > 0 && raw_blocks_.extended == 0 && raw_blocks_.computed == 0; }
  const RawScoreBlocks& rawScoreBlocks() const { return raw_blocks_; }
  uint64_t rawCacheBytes() const;  // held now (0: none)

 private:
  std::vector<std::shared_ptr<AttentionTrace>> traces_;  // made here; reusable when use_count() == 1
  std::shared_ptr<AttentionTrace> last_;                 // the newest successful run
  bool last_shared_projection_ = false;
  std::array<Tensor, 6> weights_;                        // w_q, w_k, w_v, b_q, b_k, b_v of last_
  AttentionOptions last_options_;                        // of last_: RoPE and G shape q, k
  std::unique_ptr<RawScoreCache> raw_cache_;             // Q K^T of last_'s projections; null = none
  bool projections_reused_ = false;
  RawScoreBlocks raw_blocks_;
};

// Seed 004's folded-heads layout: transpose_qkv [B, T, H*d] -> [B*H, T, d] and
// transpose_output [B*H, L, d] -> [B, L, H*d]. Same numbers, other layout.
Tensor foldHeads(const Tensor& x, int64_t heads);       // [B, T, D] -> [B*H, T, d]
Tensor unfoldHeads(const Tensor& x, int64_t heads);     // [B*H, T, d] -> [B, T, D]
// [B, H, ...] -> [B*H, ...]: the same buffer re-labelled (row-major makes it a view).
Tensor mergeBatchHeads(const Tensor& x);
// valid_lens [B] -> [B*H], each repeated H times (torch.repeat_interleave).
std::vector<int64_t> repeatInterleave(const std::vector<int64_t>& valid_lens, int64_t heads);

}  // namespace attnscope
