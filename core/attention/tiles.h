// Long maps in tiles: attention maps too large to hold as [B, H, L, S] (at L = S = 32768,
// H = 16 one map is 64 GiB). Q and K are projected once; rows are then streamed in
// blocks through the same score pass as the full trace (each row's softmax normalisers,
// its maximum and sum of exp, come out of that pass) and pooled into overview tiles
// straight away. Exact per-cell tiles for any window are computed from Q and K on demand.
// The tiled path runs the correct pipeline: no mistakes lab, no dropout. Variants (GQA,
// RoPE, ALiBi, soft-capping, sinks) run as in the full trace, through the same score pass.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "attention/attention.h"

namespace attnscope {

// Bytes a full trace may take before a run keeps Q, K and the row normalisers instead and is
// shown in tiles: 2 GiB, or the value of the environment variable ATTNSCOPE_FULL_PATH_BYTES
// (tests set it low to reach the tiled path with small maps).
uint64_t fullPathBudgetBytes();

struct TiledAttention {
  int64_t B = 0, L = 0, S = 0, D = 0, H = 0, d = 0, G = 0;
  float scale = 1.0f;
  MaskFill fill = MaskFill::NegInf;
  float softcap = 0.0f;              // > 0: soft-capping on
  std::vector<double> alibi_slopes;  // [H] or empty: ALiBi off
  // Shared: a run that changes only the mask or the score rule keeps them (TiledWorkspace).
  std::shared_ptr<const Tensor> q;  // [B, H, L, d] (RoPE applied when on)
  std::shared_ptr<const Tensor> k;  // [B, G, S, d] (RoPE applied when on); query head h reads K/V head kvHeadOf(h, H, G)
  std::vector<MaskTerm> mask;  // row predicates: no [B, L, S] either
  std::vector<std::string> mask_names;  // one per term, as the full trace's components
  // [B, H, L] each row's softmax normalisers when the run kept them (a model run beyond the
  // full path's budget, tiledFromTrace); null: computed from each row's keys when needed.
  std::shared_ptr<const std::vector<RowSoftmax>> normalisers;
};

// One layer of a model run that kept Q, K and the row normalisers instead of its maps
// (AttentionOptions::keep_maps false; attention/cached_rows.h): Q and K copied (the runner
// reuses its trace), the mask's row predicates and the score rule from `options`.
// InputError when the trace has no normalisers.
TiledAttention tiledFromTrace(const AttentionTrace& trace, const AttentionOptions& options);

// Bytes the tiled path holds for these sizes (inputs, Q, K, row-block buffers, overview).
uint64_t estimateTiledBytes(int64_t B, int64_t L, int64_t S, int64_t D, int64_t Dq, int64_t Dk, int64_t Dv,
                            int64_t H, int64_t overview_rows, int64_t overview_cols);

// Validates as runAttention does, then projects Q and K. InputError for a mistake or
// dropout (they need the full map), or when even the tiles do not fit in memory.
TiledAttention prepareTiled(const AttentionInputs& inputs, const AttentionOptions& options);

// prepareTiled for a worker that runs one input after another: when the inputs and every
// option that shapes Q and K (H, G, RoPE) are those of the last call, Q and K are taken over
// instead of projected again, so a mask, fill, scale, temperature, soft-cap or ALiBi change
// only re-scores. The inputs are recognised by a 128-bit XXH3 fingerprint of query, key,
// w_q, w_k, b_q and b_k (not kept: at L = 32768 they are hundreds of MiB).
class TiledWorkspace {
 public:
  TiledAttention prepare(const AttentionInputs& inputs, const AttentionOptions& options);
  bool projectionsReused() const { return projections_reused_; }  // by the last prepare()

 private:
  uint64_t fingerprint_[2] = {0, 0};
  std::shared_ptr<const Tensor> q_, k_;  // of the last prepare(); null before or after a failure
  bool projections_reused_ = false;
};

// The head metrics' sums over one map's query rows that are not fully masked, as
// analysis/head_metrics.h defines them (headMetricsOf turns them into means). Every metric
// is a per-row sum, so the overview measures each row while it streams it whole.
struct MetricSums {
  int64_t rows = 0;            // query rows summed (not fully masked)
  int64_t prev_rows = 0;       // of them, rows i >= 1
  int64_t induction_rows = 0;  // of them, rows with an induction key
  double entropy_bits = 0, max_prob = 0, mean_distance = 0, sink_mass = 0, diag_mass = 0, prev_mass = 0,
         effective_keys = 0, induction = 0;
  MetricSums& operator+=(const MetricSums& o);
  // One counted row i of probs [S] (zero outside [begin, end)): every sum but the entropy's,
  // which needs the row's scores (entropy_bits and effective_keys are added by the caller).
  void addRowPicks(const float* probs, int64_t S, int64_t i, int64_t induction_key);
};

// What computeOverview also measures in its pass over the real maps.
struct OverviewMeasures {
  bool metrics = false;  // Overview::metric_sums
  // > 0: Overview::block_means, every map's probabilities as mean_rows x mean_cols block
  // means (view/downsample.h's block rule; <= L, S), what the head clusters correlate.
  int64_t mean_rows = 0, mean_cols = 0;
  // [B][L] or empty: the key whose probability query row i's induction score reads, -1 none.
  std::vector<std::vector<int64_t>> induction_keys;
};

// Pooled overview of every map. Output cell (r, c) covers the block rule of
// view/downsample.h, so it equals maxPool2d of the full probabilities and maxAbsPool2d of
// the full scores with masked cells as -inf (what the app's textures pool: a masked cell is
// not a value, whatever the fill), the fill where the whole block is masked. rows <= L,
// cols <= S.
struct Overview {
  int64_t rows = 0, cols = 0;
  Tensor probs;   // [B, H, rows, cols] block maximum of the probabilities
  Tensor scores;  // [B, H, rows, cols] block value of largest |allowed score| (all masked: fill)
  BoolTensor allowed;       // [B, rows, cols] some cell of the block may attend
  BoolTensor fully_masked;  // [B, L] (a window's: [1, its rows])
  std::vector<int64_t> allowed_cells;  // [B] cells of the real [L, S] map that may attend (computeOverview)
  std::vector<MetricSums> metric_sums;  // [B, H] when measured (OverviewMeasures::metrics)
  int64_t mean_rows = 0, mean_cols = 0;
  std::vector<double> block_means;      // [B, H, mean_rows, mean_cols] when measured
};
// progress(fraction done) is called after every block of rows, from the computing
// threads one at a time; returning false cancels, and the function then returns nullopt.
// InputError for measures that do not fit the map.
std::optional<Overview> computeOverview(const TiledAttention& tiled, int64_t rows, int64_t cols,
                                        const std::function<bool(double)>& progress = {},
                                        const OverviewMeasures& measures = {});

// One map's window, pooled as the overview pools the whole map: rows [i0, i0 + rows) x keys
// [j0, j0 + cols) of map (b, h) into out_rows x out_cols cells (the block rule relative to
// the window), so it equals the pooled window of the full map. Every row is scored over all
// its keys (the normalisers need them). Shapes as Overview with B = H = 1; nullopt when
// progress cancels. InputError outside the map or for out sizes not in [1, rows] x [1, cols].
std::optional<Overview> computeWindow(const TiledAttention& tiled, int64_t b, int64_t h, int64_t i0, int64_t rows,
                                      int64_t j0, int64_t cols, int64_t out_rows, int64_t out_cols,
                                      const std::function<bool(double)>& progress = {});

// Exact values of rows [i0, i0 + rows) x keys [j0, j0 + cols) of map (b, h): the same
// numbers as the full trace's scores and probs there. With kept normalisers only the
// window's keys are scored (p = exp(s - max) / sum); otherwise each row over all its keys.
// Throws InputError outside the map.
struct Tile {
  int64_t b = 0, h = 0, i0 = 0, j0 = 0, rows = 0, cols = 0;
  Tensor scores;  // [rows, cols]
  Tensor probs;   // [rows, cols]
  BoolTensor allowed;  // [rows, cols] 1 = may attend
};
Tile computeTile(const TiledAttention& tiled, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
                 int64_t cols);

}  // namespace attnscope
