// Causal self-attention that keeps what it computed (a model's KV cache): the trace of a
// layer holds, per position, K (after RoPE) and V, the map rows and the output rows, and a
// run computes only the rows from a given position on; the rows before it are kept.
//
// Bit for bit: OpenBLAS gives a row a value that depends on how many rows its call covers,
// so every row-wise GEMM here runs on fixed blocks at absolute positions. The attention's
// and the output heads' calls cover 64-row blocks (rowGridStart). A layer's linear maps
// (projections, MLP) cover the blocks of rowBlocks: whole 512-row super-blocks, then 64-row
// blocks; a call over 64 rows packs all of W, so on a 1B model the 64-row grid alone spends
// as long packing weights as multiplying. A run from position p recomputes from runStart
// (the start of p's block, or of a super-block that this run fills or empties), and each
// block makes exactly the calls a from-scratch run of the same length makes: an incremental
// run equals a from-scratch run bit for bit, and the full forward is this path from 0.
//
// Sizes: L positions, Din input width, D = H*d, G K/V heads, Do output width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.h"

namespace attnscope {

constexpr int64_t kRowSuperBlock = 512;  // 8 grid blocks

// The start of the 64-row block that holds `position`.
int64_t rowGridStart(int64_t position);

// The end of the block that holds position i in a run of L positions: a full 512-row
// super-block's, else its 64-row block's (at most L).
int64_t rowBlockEnd(int64_t i, int64_t L);

// The first position a run of L positions computes when its tokens first differ from the
// last run's (of last_L positions) at `prefix`: the start of prefix's block, or earlier, the
// start of the super-block this run fills or empties (its rows were computed in other calls).
int64_t runStart(int64_t prefix, int64_t last_L, int64_t L);

// y rows [start, L) = x rows [start, L) W^T + b, one GEMM per block of a run of L positions
// (rowBlockEnd). x: [L - start, Din] and y: [L - start, Dout] hold only those rows; start
// from runStart.
void linearRows(const float* x, int64_t start, int64_t L, const Tensor& w, const Tensor& b, float* y);
// The same over 64-row blocks only (the output heads: any block of logits on its own).
void linearGridRows(const float* x, int64_t start, int64_t end, const Tensor& w, const Tensor& b, float* y);

// Recomputes rows [start, L) of one causal self-attention layer into trace `t`, keeping
// rows [0, start) of the previous run (its K, V, maps and outputs). weights: w_q .. b_o of
// the layer (query/key/value unused); options: causal mask (window allowed), GQA, RoPE,
// soft-cap, scale. start: on the grid, at most t.L (0 = a full run, which also validates
// the weights). x: [L - start, Din] the layer's input rows; out: [L - start, Do] their
// outputs. labels: [L] token labels. InputError for bad weights (full runs).
void attendRows(AttentionTrace& t, const AttentionInputs& weights, const AttentionOptions& options, const float* x,
                int64_t start, int64_t L, const std::vector<std::string>& labels, float* out);

// Generation's one-row steps: a layer's K/V in slots [G, capacity, d], so appending a
// position moves nothing (the trace's [1, G, L, d] moves every head's rows, and its
// [H, L, L] maps every row, each step). Under a sliding mask (a causal window W, with k
// sinks) the cache evicts as the stepper does: slots [0, k) keep the first k positions and
// a ring of W + 1 slots the last ones, so it holds k + W + 1 entries at most; otherwise every
// position stays (the capacity doubles when full).
struct DecodeCache {
  std::vector<float> k, v;         // [G, capacity, d], RoPE applied to k
  std::vector<int64_t> positions;  // [capacity]: the position in each slot, -1 = empty
  int64_t G = 0, d = 0, L = 0, capacity = 0;
  int64_t sinks = 0, ring = -1;    // ring -1: no eviction
  int64_t entries() const;         // slots holding a position
};

// The cache of positions [0, t.L) of a layer's trace (its K after RoPE, and V), under the
// layer's mask (what it may evict).
void startDecode(const AttentionTrace& t, const MaskSpec& mask, DecodeCache& cache);

// Position p = cache.L through one causal layer, the way generation steps: q, k, v of x [Din]
// (one row per projection; RoPE at p), K/V into p's slot, then the row over the cached keys
// with the layer's mask row p. probs: [H, p + 1] (0 for masked or evicted keys); out: [Do].
// One-row GEMMs, so the row agrees with attendRows' within float rounding, not bit for bit:
// a later attendRows run recomputes these positions' blocks (ModelRun::decoded_from).
// into.trace: also append the row to the layer's trace (its maps re-laid out for p + 1
// positions, as a grid run would leave them; the trace must hold positions [0, p)).
struct TraceRow {
  AttentionTrace* trace = nullptr;
  const std::vector<std::string>* labels = nullptr;  // [p + 1]
};
void decodeRow(DecodeCache& cache, const AttentionInputs& weights, const AttentionOptions& options, const float* x,
               float* probs, float* out, const TraceRow& into = {});

}  // namespace attnscope
