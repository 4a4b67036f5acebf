// Causal self-attention that keeps what it computed (a model's KV cache): the trace of a
// layer holds, per position, K (after RoPE) and V, the map rows and the output rows, and a
// run computes only the rows from a given position on; the rows before it are kept.
//
// Bit for bit: every computation of a row sees that row alone (the linear maps, Q K^T and the
// context through attention/row_gemm.h: rowGemm, scoreRows, combineRowBlock; each row's
// softmax over its own keys), so a run from position p computes rows [p, L) only and equals a from-scratch
// run bit for bit; the full forward is this path from 0.
//
// Sizes: L positions, Din input width, D = H*d, G K/V heads, Do output width.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention.h"
#include "attention/row_gemm.h"
#include "tensor/weights.h"

namespace attnscope {

// One attention layer's projections, float32 or bfloat16 (tensor/weights.h): q [H d, Din],
// k and v [G d, Din], o [Do, H d]; biases [out] or null.
struct Projections {
  WeightRows q, k, v, o;
  const float *b_q = nullptr, *b_k = nullptr, *b_v = nullptr, *b_o = nullptr;
};
Projections projectionsOf(const AttentionInputs& in);  // its w_q .. b_o (they must outlive the result)

// A run's [L, L] self-attention mask and its row spans, built by the first layer and copied
// by the layers with the same spec (every layer of most models): building it costs more than
// a layer's new row when typing. Valid for any run of that spec and length.
struct RunMasks {
  MaskSpec spec;
  int64_t L = -1;
  MaskSet set;
  std::vector<RowSpan> spans;
};

// An intervention on one head of a layer (model/interventions.h makes them from the specs):
// its z (the context rows that feed the output projection) kept, zeroed, replaced by its mean
// over the L positions, or replaced by given rows; and (query, key) cells knocked out: their
// score is the mask's fill (-inf) before the softmax, their probability exactly 0, and the
// row renormalises. The trace keeps the head's own z (context_heads) and its map as computed.
struct HeadEdit {
  enum class Z { Keep, Zero, Mean, Replace };
  Z z = Z::Keep;
  const float* z_rows = nullptr;                       // Replace: [L, d]
  std::vector<std::pair<int64_t, int64_t>> knockout;  // (query, key) cells
  bool empty() const { return z == Z::Keep && knockout.empty(); }
};
using HeadEdits = std::vector<HeadEdit>;  // [H], or empty: none

// Recomputes rows [start, L) of one causal self-attention layer into trace `t`, keeping
// rows [0, start) of the previous run (its K, V, maps and outputs). weights: the layer's
// projections; options: causal mask (window allowed), GQA, RoPE, soft-cap, scale. start: at
// most t.L (0 = a full run, which also checks the weights' shapes). x:
// [L - start, Din] the layer's input rows; out: [L - start, Do] their outputs. labels: [L]
// token labels. masks: shared by the layers of a run, or null. edits: [H] or null (a mean
// ablation reads rows [0, start) of the trace's z as well: the caller recomputes whatever
// changed). kept: the trace holding rows [0, start) when that is not t (the last run's, lent
// read-only: t is other storage, every value of it rewritten); null = t itself. InputError
// for weights whose shapes do not fit the options (full runs).
void attendRows(AttentionTrace& t, const Projections& weights, const AttentionOptions& options, const float* x,
                int64_t start, int64_t L, const std::vector<std::string>& labels, float* out,
                RunMasks* masks = nullptr, const HeadEdits* edits = nullptr, const AttentionTrace* kept = nullptr);

// Rows [start, t.L) of a layer's output from the heads' z kept in trace t (context_heads),
// each as its edit says, through the output projection o (bias b_o or null): into t.output
// and out [t.L - start, Do]; rows: scratch. The end of attendRows, alone for a run whose
// attention is the last run's (its input and knockouts unchanged: only an ablation or a
// patched head changed), so the same bits as attendRows.
void outputRows(AttentionTrace& t, const WeightRows& o, const float* b_o, const HeadEdits* edits, int64_t start,
                FloatBuffer& rows, float* out);

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
// The row over the cached slots (in ring order under eviction) agrees with attendRows' within
// float rounding, not promised bit for bit: a later attendRows run recomputes from these
// positions (ModelRun::decoded_from). into.trace: also append the row to the layer's trace
// (its maps re-laid out for p + 1 positions, as a run would leave them; the trace must hold
// positions [0, p)).
struct TraceRow {
  AttentionTrace* trace = nullptr;
  const std::vector<std::string>* labels = nullptr;  // [p + 1]
  RunMasks* masks = nullptr;                         // shared by the step's layers, or null
};
void decodeRow(DecodeCache& cache, const Projections& weights, const AttentionOptions& options, const float* x,
               float* probs, float* out, const TraceRow& into = {});

}  // namespace attnscope
