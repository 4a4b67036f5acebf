#include "attention/tiles.h"

#include <omp.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "attention/kernel.h"
#include "attention/mistakes.h"
#include "attention/row_gemm.h"
#include "attention/row_stats.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

// One thread's buffers for a block of query rows: mask, scores and probabilities [rows, S]
// (leading dimension S; only keys [0, width) are written).
struct RowBlock {
  std::vector<uint8_t> allowed, scratch;
  std::vector<RowSpan> spans;
  std::vector<RowSoftmax> normalisers;  // [rows] each row's max and sum of exp
  std::vector<float> scores, probs;
  RowSpan keys;       // keys some row of the block may attend ({0, 0}: none)
  int64_t width = 0;  // scores / probs hold keys [0, width); every key past keys.end is masked
  std::vector<float> pooled_max, pooled_min, pooled_prob;  // overview: [cols] accumulators
};

// The mask of rows [i0, i1) of batch item b (the same for every head): block.allowed, spans,
// keys and width. Keys [0, width) will be scored, width = the first of `ends` (ascending) at
// or past the last attended key; whole rows (width S) when ends is null.
void maskRows(const TiledAttention& t, int64_t b, int64_t i0, int64_t i1, RowBlock& block,
              const std::vector<int64_t>* ends = nullptr) {
  const int64_t rows = i1 - i0, S = t.S;
  block.allowed.resize(rows * S);
  for (int64_t i = i0; i < i1; ++i) maskRow(t.mask, b, i, S, &block.allowed[(i - i0) * S], block.scratch);
  block.spans = rowSpans(block.allowed.data(), rows, S);
  RowSpan keys{S, 0};
  for (const RowSpan& span : block.spans) {
    if (span.begin == span.end) continue;
    keys.begin = std::min(keys.begin, span.begin);
    keys.end = std::max(keys.end, span.end);
  }
  if (keys.begin >= keys.end) keys = {0, 0};
  block.keys = keys;
  block.width = S;
  if (ends) block.width = keys.end == 0 ? 0 : *std::lower_bound(ends->begin(), ends->end(), keys.end);
}

// The keys transposed pay off over several rows only (an overview's block is often one row).
constexpr int64_t kTransposeRows = 8;

// y [rows, keys] (rows ldy apart) = q [rows, d] k [keys, d]^T through the full trace's score
// kernel (one FMA chain per cell, attention/row_gemm.h): a tile's scores are the run's bit for
// bit, whatever window it covers (a BLAS GEMM sums in another order, and on AVX-512 machines
// the maps then differed from the run's by more than 1e-6).
void headScores(const float* q, int64_t rows, const float* k, int64_t keys, int64_t d, float* y, int64_t ldy) {
  if (rows <= 0 || keys <= 0) return;
  const KeysT kt = rows >= kTransposeRows ? transposeKeys(k, keys, d) : KeysT{};
  const KeysT* keys_t = kt.ld ? &kt : nullptr;
  // The rows split between the threads, as the BLAS GEMM did (a cell's bits do not depend on
  // the rows its call covers); one thread for a small window, or inside a parallel caller.
  constexpr int64_t kThreadedMultiplyAdds = int64_t{1} << 20;
  const int64_t parts = rows * keys * d >= kThreadedMultiplyAdds ? std::min<int64_t>(omp_get_max_threads(), rows) : 1;
#pragma omp parallel for num_threads(static_cast<int>(parts)) schedule(static) if (parts > 1)
  for (int64_t part = 0; part < parts; ++part) {
    const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
    attnscope::scoreRows(q + r0 * d, d, r1 - r0, k, keys_t, 0, keys, d, y + r0 * ldy, ldy);
  }
}

// Rows [i0, i1) of map (b, h), masked by maskRows, into block.scores / block.probs through the
// same GEMM and score pass as the full trace (keys no row of the block may attend skipped).
// keys_t: K^T of every K/V head, [B * G] (the same bits as without it), or null.
void scoreRows(const TiledAttention& t, int64_t b, int64_t h, int64_t i0, int64_t i1, RowBlock& block,
               const std::vector<KeysT>* keys_t = nullptr) {
  const int64_t rows = i1 - i0, S = t.S, d = t.d;
  const RowSpan keys = block.keys;
  block.scores.resize(rows * S);
  block.probs.resize(rows * S);
  block.normalisers.resize(rows);
  const size_t bh = static_cast<size_t>(b * t.H + h);
  const size_t kv = static_cast<size_t>(b * t.G + kvHeadOf(h, t.H, t.G));
  const float* q = &t.q->data[(bh * t.L + i0) * d];
  if (keys_t && keys.begin < keys.end)
    attnscope::scoreRows(q, d, rows, &t.k->data[kv * S * d], &(*keys_t)[kv], keys.begin, keys.end, d,
                         &block.scores[keys.begin], S);
  else
    headScores(q, rows, &t.k->data[(kv * S + keys.begin) * d], keys.end - keys.begin, d, &block.scores[keys.begin], S);
  ScoreRule rule;
  rule.scale = t.scale;
  rule.fill = t.fill;
  rule.softcap = t.softcap;
  if (!t.alibi_slopes.empty()) rule.alibi_slope = t.alibi_slopes[h];
  const float empty_row_prob = t.fill == MaskFill::NegInf ? 0.0f : 1.0f / static_cast<float>(S);
  for (int64_t r = 0; r < rows; ++r) {
    const bool empty = block.spans[r].begin == block.spans[r].end;
    float* scores = &block.scores[r * S];
    float* probs = &block.probs[r * S];
    block.normalisers[r] =
        scoreRow(rule, i0 + r, scores, &block.allowed[r * S], empty ? RowSpan{0, 0} : keys, block.width, scores, probs);
    // A fully masked row's probabilities are 0 (-inf fill) or 1/S (-1e9), whatever the width.
    if (empty) std::fill(probs, probs + block.width, empty_row_prob);
  }
}

// One overview row from a scored block: output cell c is the block of keys [starts[c],
// starts[c + 1]) over every row of the block, pooled as maxPool2d pools the probabilities
// and maxAbsPool2d the scores of the full maps with masked cells left out (as the app's
// textures pool them: a masked cell is not a value): the fill only when every cell of the
// block is masked. Key blocks past block.width are masked in every row: their score is the
// fill, their probability 0 (or 1/S from a fully masked -1e9 row).
void poolRows(const TiledAttention& t, RowBlock& block, int64_t rows, const std::vector<int64_t>& starts,
              float* out_probs, float* out_scores) {
  const int64_t cols = static_cast<int64_t>(starts.size()) - 1, S = t.S;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // A -inf fill is skipped by value; a -1e9 fill looks like a score, so the mask decides.
  const bool fill_is_finite = t.fill != MaskFill::NegInf;
  block.pooled_max.assign(cols, -kInf);
  block.pooled_min.assign(cols, kInf);
  block.pooled_prob.assign(cols, -kInf);
  int64_t computed = 0;  // key blocks with values: those starting before width
  while (computed < cols && starts[computed] < block.width) ++computed;
  bool empty_row = false;
  for (int64_t r = 0; r < rows; ++r) {
    empty_row = empty_row || block.spans[r].begin == block.spans[r].end;
    const float* scores = &block.scores[r * S];
    const float* probs = &block.probs[r * S];
    const uint8_t* allowed = &block.allowed[r * S];
    for (int64_t c = 0; c < computed; ++c) {
      float hi = block.pooled_max[c], lo = block.pooled_min[c], p = block.pooled_prob[c];
      if (fill_is_finite) {
        for (int64_t j = starts[c]; j < starts[c + 1]; ++j) {
          p = probs[j] > p ? probs[j] : p;
          if (!allowed[j]) continue;
          hi = scores[j] > hi ? scores[j] : hi;
          lo = scores[j] < lo ? scores[j] : lo;
        }
      } else {
        for (int64_t j = starts[c]; j < starts[c + 1]; ++j) {
          const float v = scores[j];
          hi = v > hi ? v : hi;
          lo = (v < lo && v != -kInf) ? v : lo;  // -inf is masked, not an extreme
          p = probs[j] > p ? probs[j] : p;
        }
      }
      block.pooled_max[c] = hi, block.pooled_min[c] = lo, block.pooled_prob[c] = p;
    }
  }
  ScoreRule rule;
  rule.fill = t.fill;
  for (int64_t c = 0; c < computed; ++c) {
    const float hi = block.pooled_max[c], lo = block.pooled_min[c];
    out_probs[c] = block.pooled_prob[c];
    if (hi == -kInf) {
      out_scores[c] = rule.fillValue();  // every cell masked
    } else if (std::fabs(hi) != std::fabs(lo) || hi == lo) {
      out_scores[c] = std::fabs(lo) > std::fabs(hi) ? lo : hi;
    } else {
      // +a and -a both present: the first in row-major order wins, as in maxAbsPool2d.
      const float a = std::fabs(hi);
      bool found = false;
      for (int64_t r = 0; r < rows && !found; ++r) {
        const float* scores = &block.scores[r * S];
        const uint8_t* allowed = &block.allowed[r * S];
        for (int64_t j = starts[c]; j < starts[c + 1] && !found; ++j) {
          found = allowed[j] && std::fabs(scores[j]) == a;
          if (found) out_scores[c] = scores[j];
        }
      }
    }
  }
  const float masked_prob = empty_row && t.fill == MaskFill::NegBillion ? 1.0f / static_cast<float>(S) : 0.0f;
  std::fill(out_probs + computed, out_probs + cols, masked_prob);
  std::fill(out_scores + computed, out_scores + cols, rule.fillValue());
}

// InputError unless rows [i0, i0 + rows) x keys [j0, j0 + cols) of map (b, h) lie in the map.
void checkTileWindow(const TiledAttention& t, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
                     int64_t cols) {
  if (b < 0 || b >= t.B || h < 0 || h >= t.H || i0 < 0 || rows < 1 || i0 + rows > t.L || j0 < 0 || cols < 1 ||
      j0 + cols > t.S) {
    throw InputError("tile rows [" + std::to_string(i0) + ", " + std::to_string(i0 + rows) + ") x keys [" +
                     std::to_string(j0) + ", " + std::to_string(j0 + cols) + ") of map (b=" + std::to_string(b) +
                     ", h=" + std::to_string(h) + ") is outside [B=" + std::to_string(t.B) + ", H=" +
                     std::to_string(t.H) + ", L=" + std::to_string(t.L) + ", S=" + std::to_string(t.S) + "]");
  }
}

}  // namespace

MetricSums& MetricSums::operator+=(const MetricSums& o) {
  rows += o.rows, prev_rows += o.prev_rows, induction_rows += o.induction_rows;
  entropy_bits += o.entropy_bits, max_prob += o.max_prob, mean_distance += o.mean_distance;
  sink_mass += o.sink_mass, diag_mass += o.diag_mass, prev_mass += o.prev_mass;
  effective_keys += o.effective_keys, induction += o.induction;
  return *this;
}

void MetricSums::addRowPicks(const float* probs, int64_t S, int64_t i, int64_t induction_key) {
  const auto p = [&](int64_t j) { return j >= 0 && j < S ? static_cast<double>(probs[j]) : 0.0; };
  sink_mass += p(0);
  diag_mass += p(i);
  if (i >= 1) {
    ++prev_rows;
    prev_mass += p(i - 1);
  }
  if (induction_key >= 0) {
    ++induction_rows;
    induction += p(induction_key);
  }
}

uint64_t estimateTiledBytes(int64_t B, int64_t L, int64_t S, int64_t D, int64_t Dq, int64_t Dk, int64_t Dv,
                            int64_t H, int64_t overview_rows, int64_t overview_cols) {
  const double b = static_cast<double>(B), l = static_cast<double>(L), s = static_cast<double>(S);
  const double threads = static_cast<double>(omp_get_max_threads());
  const double bytes = 4.0 * (b * l * Dq + b * s * (Dk + Dv))      // inputs
                       + 4.0 * (2.0 * b * l * D + b * s * D)        // q_proj, q (per head), k
                       + 4.0 * static_cast<double>(D) * (Dq + Dk)   // weights
                       + threads * 9.0 * 64.0 * s                   // row blocks: scores, probs, mask
                       + 8.0 * b * H * overview_rows * overview_cols + b * l;
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

namespace {

// Everything but Q and K: validation, the score rule and the mask's row predicates.
TiledAttention tiledWithoutProjections(const AttentionInputs& in, const AttentionOptions& options, RunSizes& z) {
  z = validateInputs(in, options);
  if (options.mistake != Mistake::None) {
    throw InputError(std::string("mistake '") + mistakeName(options.mistake) +
                     "' needs the full map; the tiled long-map path runs the correct pipeline");
  }
  if (options.train && options.dropout > 0.0f) {
    throw InputError("dropout needs the full map; the tiled long-map path shows probabilities before dropout");
  }
  checkMemory(estimateTiledBytes(z.B, z.L, z.S, z.D, z.Dq, z.Dk, z.Dv, z.H, 0, 0));
  const RunPlan plan = planRun(options, z);
  TiledAttention t;
  t.B = z.B, t.L = z.L, t.S = z.S, t.D = z.D, t.H = z.H, t.d = z.d, t.G = z.G;
  t.scale = plan.rule.scale;
  t.fill = options.fill;
  t.softcap = plan.rule.softcap;
  t.alibi_slopes = plan.alibi_slopes;
  t.mask = maskTerms(options.mask, z.B, z.L, z.S, in.valid_lens, in.key_padding, in.attn_mask);
  for (const MaskTerm& term : t.mask) t.mask_names.push_back(term.name);
  return t;
}

// [B, T, D] projections, split into heads [B, H, T, d] (RoPE applied when on).
void project(const AttentionInputs& in, const AttentionOptions& options, const RunSizes& z, TiledAttention& t) {
  Tensor proj({z.B, z.L, z.D});
  linearInto(in.query.data.data(), z.B * z.L, in.w_q, in.b_q, proj.data.data());
  Tensor q = foldHeads(proj, z.H);
  q.shape = {z.B, z.H, z.L, z.d};
  proj = Tensor({z.B, z.S, z.G * z.d});
  linearInto(in.key.data.data(), z.B * z.S, in.w_k, in.b_k, proj.data.data());
  Tensor k = foldHeads(proj, z.G);
  k.shape = {z.B, z.G, z.S, z.d};
  if (options.rope) {
    applyRope(q, options.rope_base, options.rope_style, options.rope_inv_freq);
    applyRope(k, options.rope_base, options.rope_style, options.rope_inv_freq);
  }
  t.q = std::make_shared<const Tensor>(std::move(q));
  t.k = std::make_shared<const Tensor>(std::move(k));
}

// What Q and K are made of: the tensors' shapes and values and the options that shape them.
XXH128_hash_t projectionFingerprint(const AttentionInputs& in, const AttentionOptions& options) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (const Tensor* t : {&in.query, &in.key, &in.w_q, &in.w_k, &in.b_q, &in.b_k}) {
    const uint64_t rank = t->shape.size();
    XXH3_128bits_update(state, &rank, sizeof rank);
    XXH3_128bits_update(state, t->shape.data(), t->shape.size() * sizeof(int64_t));
    XXH3_128bits_update(state, t->data.data(), t->data.size() * sizeof(float));
  }
  const int64_t shape_options[] = {options.heads, options.kv_heads, options.rope ? 1 : 0,
                                   static_cast<int64_t>(options.rope_style)};
  XXH3_128bits_update(state, shape_options, sizeof shape_options);
  XXH3_128bits_update(state, &options.rope_base, sizeof options.rope_base);
  XXH3_128bits_update(state, options.rope_inv_freq.data(), options.rope_inv_freq.size() * sizeof(double));
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

}  // namespace

TiledAttention prepareTiled(const AttentionInputs& in, const AttentionOptions& options) {
  RunSizes z{};
  TiledAttention t = tiledWithoutProjections(in, options, z);
  project(in, options, z, t);
  return t;
}

TiledAttention TiledWorkspace::prepare(const AttentionInputs& in, const AttentionOptions& options) {
  RunSizes z{};
  TiledAttention t = tiledWithoutProjections(in, options, z);
  const XXH128_hash_t hash = projectionFingerprint(in, options);
  projections_reused_ = q_ && k_ && fingerprint_[0] == hash.low64 && fingerprint_[1] == hash.high64;
  if (projections_reused_) {
    t.q = q_, t.k = k_;
    return t;
  }
  q_.reset(), k_.reset();  // a failure below leaves nothing to reuse
  project(in, options, z, t);
  q_ = t.q, k_ = t.k;
  fingerprint_[0] = hash.low64, fingerprint_[1] = hash.high64;
  return t;
}

namespace {

// Which maps and which part of them poolMaps pools: maps (b, h) for b in [b0, b1), h in
// [h0, h1); rows [i0, i1) x keys [j0, j1) into rows x cols cells (view/downsample.h's block
// rule, relative to the window).
struct PoolRequest {
  int64_t b0, b1, h0, h1, i0, i1, j0, j1, rows, cols;
  const OverviewMeasures* measures = nullptr;  // the whole map only (computeOverview)
};

// Block r of `count` blocks over n holds indices [r * n / count, (r + 1) * n / count): the
// block of index i (view/downsample.h's rule).
int64_t blockOf(int64_t i, int64_t n, int64_t count) { return ((i + 1) * count - 1) / n; }

// One work item's measures of the real map: its rows' metric sums per head, and per head
// the probability sums of the mean blocks its rows fall in (mean rows first_mean_row.. ).
struct ItemMeasures {
  std::vector<MetricSums> sums;    // [heads]
  int64_t first_mean_row = 0, mean_rows = 0;
  std::vector<double> mean_sums;   // [heads, mean_rows, mean_cols]
  int64_t allowed_cells = 0;
};

// Rows [0, rows) of a scored block, query rows i0.. of one map: metric sums (when `sums`)
// and probability sums per key block of mean_starts (when `means`, [touched mean rows,
// mean_cols], relative to first_mean_row; mean_row_of gives a row's).
void measureRows(const TiledAttention& t, const RowBlock& block, int64_t i0, int64_t rows, const int64_t* induction_keys,
                 MetricSums* sums, const std::vector<int64_t>& mean_starts, int64_t mean_rows, int64_t first_mean_row,
                 double* means) {
  const int64_t mean_cols = static_cast<int64_t>(mean_starts.size()) - 1;
  const double empty_row_prob = t.fill == MaskFill::NegInf ? 0.0 : static_cast<double>(1.0f / static_cast<float>(t.S));
  constexpr double kLn2 = 0.69314718055994530942;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const RowSpan span = block.spans[r];
    double* mean_row = means ? means + (blockOf(i, t.L, mean_rows) - first_mean_row) * mean_cols : nullptr;
    if (span.begin == span.end) {  // not in the metrics; its probabilities are 0 or 1/S everywhere
      for (int64_t c = 0; mean_row && c < mean_cols; ++c)
        mean_row[c] += empty_row_prob * static_cast<double>(mean_starts[c + 1] - mean_starts[c]);
      continue;
    }
    const float* scores = &block.scores[r * t.S];
    const float* probs = &block.probs[r * t.S];
    const RowSoftmax& normalisers = block.normalisers[r];
    RowMoments row;
    if (mean_row) {  // the row's keys block by block, each block's mass kept
      for (int64_t c = blockOf(span.begin, t.S, mean_cols); c < mean_cols && mean_starts[c] < span.end; ++c) {
        const double before = row.mass;
        addRowMoments(scores, probs, std::max(span.begin, mean_starts[c]), std::min(span.end, mean_starts[c + 1]),
                      normalisers.max, i, row);
        mean_row[c] += row.mass - before;
      }
    } else {
      addRowMoments(scores, probs, span.begin, span.end, normalisers.max, i, row);
    }
    if (!sums) continue;
    // p = exp(s - max) * c with c = 1 / sum, as the score pass rounds it: ln p = (s - max) + ln c.
    const double inverse_sum = 1.0f / normalisers.sum;
    const double entropy = -(row.weighted_logit + row.mass * std::log(inverse_sum)) / kLn2;
    ++sums->rows;
    sums->entropy_bits += entropy;
    sums->effective_keys += std::exp2(entropy);
    sums->max_prob += row.max_prob;
    sums->mean_distance += row.distance;
    sums->addRowPicks(probs, block.width, i, induction_keys ? induction_keys[i] : -1);
  }
}

// Whether block c of the pooled keys holds an allowed cell in some row of the block.
void poolAllowed(const RowBlock& block, int64_t rows, int64_t S, const std::vector<int64_t>& starts,
                 uint8_t* out) {
  const int64_t cols = static_cast<int64_t>(starts.size()) - 1;
  for (int64_t c = 0; c < cols; ++c) {
    bool any = false;
    // Keys past width are masked in every row; masks are 0 / 1 bytes.
    const int64_t end = std::min(starts[c + 1], block.width);
    for (int64_t r = 0; r < rows && !any && starts[c] < end; ++r) {
      any = std::memchr(&block.allowed[r * S + starts[c]], 1, static_cast<size_t>(end - starts[c])) != nullptr;
    }
    out[c] = any;
  }
}

// The items' measures of the whole map (q covers every map) summed in item order into o.
void sumMeasures(const TiledAttention& t, const OverviewMeasures& m, const PoolRequest& q,
                 const std::vector<ItemMeasures>& items, Overview& o) {
  o.allowed_cells.assign(static_cast<size_t>(t.B), 0);
  if (m.metrics) o.metric_sums.assign(static_cast<size_t>(t.B * t.H), MetricSums{});
  o.mean_rows = m.mean_rows, o.mean_cols = m.mean_cols;
  const int64_t mean_cells = m.mean_rows * m.mean_cols;
  o.block_means.assign(static_cast<size_t>(t.B * t.H * mean_cells), 0.0);
  for (size_t item = 0; item < items.size(); ++item) {
    const ItemMeasures& measured = items[item];
    const int64_t b = static_cast<int64_t>(item) / q.rows;
    o.allowed_cells[b] += measured.allowed_cells;
    for (int64_t h = 0; h < t.H; ++h) {
      if (m.metrics) o.metric_sums[b * t.H + h] += measured.sums[h];
      const int64_t touched = measured.mean_rows * m.mean_cols;
      for (int64_t n = 0; n < touched; ++n)
        o.block_means[(b * t.H + h) * mean_cells + measured.first_mean_row * m.mean_cols + n] +=
            measured.mean_sums[h * touched + n];
    }
  }
  // Sums into means: block (r, c) holds its rows' x keys' cells.
  for (int64_t bh = 0; bh < t.B * t.H; ++bh)
    for (int64_t r = 0; r < m.mean_rows; ++r)
      for (int64_t c = 0; c < m.mean_cols; ++c) {
        const int64_t cells = ((r + 1) * t.L / m.mean_rows - r * t.L / m.mean_rows) *
                              ((c + 1) * t.S / m.mean_cols - c * t.S / m.mean_cols);
        o.block_means[bh * mean_cells + r * m.mean_cols + c] /= static_cast<double>(cells);
      }
}

// K^T of every K/V head [B * G] when an overview's blocks are a few rows each (each block
// would score its rows without: the transposed keys pay off over several rows only) and they
// fit kTransposedKeysBytes; else empty.
std::vector<KeysT> keysTransposedFor(const TiledAttention& t, int64_t rows_per_block) {
  constexpr uint64_t kTransposedKeysBytes = uint64_t{64} << 20;
  std::vector<KeysT> out;
  if (rows_per_block >= kTransposeRows || static_cast<uint64_t>(t.B * t.G * t.S * t.d) * sizeof(float) > kTransposedKeysBytes)
    return out;
  out.resize(static_cast<size_t>(t.B * t.G));
#pragma omp parallel for schedule(static)
  for (int64_t kv = 0; kv < t.B * t.G; ++kv) out[kv] = transposeKeys(&t.k->data[kv * t.S * t.d], t.S, t.d);
  return out;
}

std::optional<Overview> poolMaps(const TiledAttention& t, const PoolRequest& q,
                                 const std::function<bool(double)>& progress) {
  const int64_t nb = q.b1 - q.b0, nh = q.h1 - q.h0, rows = q.rows, cols = q.cols;
  const int64_t in_rows = q.i1 - q.i0, in_cols = q.j1 - q.j0;
  const std::vector<KeysT> keys_t = keysTransposedFor(t, (in_rows + rows - 1) / rows);
  Overview o;
  o.rows = rows, o.cols = cols;
  o.probs = Tensor({nb, nh, rows, cols});
  o.scores = Tensor({nb, nh, rows, cols});
  o.allowed = BoolTensor({nb, rows, cols});
  o.fully_masked = BoolTensor({nb, in_rows});
  // Work items: one output row (a block of input rows) of batch item b, every head (the mask
  // rows are the same for all heads: computed once).
  const int64_t items = nb * rows;
  std::vector<int64_t> col_starts(static_cast<size_t>(cols + 1));
  for (int64_t c = 0; c <= cols; ++c) col_starts[c] = q.j0 + c * in_cols / cols;
  // Keys are scored up to the first pooled block end past the last attended key; a window
  // that stops short of S scores whole rows (every key counts in the normalisers).
  const std::vector<int64_t> col_ends(col_starts.begin() + 1, col_starts.end());
  const std::vector<int64_t>* ends = q.j1 == t.S ? &col_ends : nullptr;
  // Measures: per work item while the threads run, summed in item order afterwards (the
  // same numbers whichever thread took which item).
  const OverviewMeasures* m = q.measures;
  std::vector<ItemMeasures> item_measures(m ? static_cast<size_t>(items) : 0);
  std::vector<int64_t> mean_starts;
  if (m && m->mean_rows > 0)
    for (int64_t c = 0; c <= m->mean_cols; ++c) mean_starts.push_back(c * t.S / m->mean_cols);
  std::atomic<int64_t> done{0};
  std::atomic<bool> cancelled{false};
#pragma omp parallel
  {
    RowBlock block;
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      if (cancelled.load(std::memory_order_relaxed)) continue;
      const int64_t r = item % rows, b = q.b0 + item / rows;
      const int64_t i0 = q.i0 + r * in_rows / rows, i1 = q.i0 + (r + 1) * in_rows / rows;
      maskRows(t, b, i0, i1, block, ends);
      for (int64_t i = i0; i < i1; ++i) {
        o.fully_masked.data[(b - q.b0) * in_rows + i - q.i0] = block.spans[i - i0].begin == block.spans[i - i0].end;
      }
      poolAllowed(block, i1 - i0, t.S, col_starts, &o.allowed.data[((b - q.b0) * rows + r) * cols]);
      ItemMeasures* measured = m ? &item_measures[item] : nullptr;
      if (measured) {
        for (int64_t i = i0; i < i1; ++i) {
          const RowSpan span = block.spans[i - i0];
          const uint8_t* allowed = &block.allowed[(i - i0) * t.S];
          for (int64_t j = span.begin; j < span.end; ++j) measured->allowed_cells += allowed[j];
        }
        if (m->metrics) measured->sums.assign(static_cast<size_t>(nh), MetricSums{});
        if (m->mean_rows > 0) {
          measured->first_mean_row = blockOf(i0, t.L, m->mean_rows);
          measured->mean_rows = blockOf(i1 - 1, t.L, m->mean_rows) - measured->first_mean_row + 1;
          measured->mean_sums.assign(static_cast<size_t>(nh * measured->mean_rows * m->mean_cols), 0.0);
        }
      }
      const int64_t* induction_keys = m && !m->induction_keys.empty() ? m->induction_keys[b].data() : nullptr;
      for (int64_t h = q.h0; h < q.h1; ++h) {
        scoreRows(t, b, h, i0, i1, block, keys_t.empty() ? nullptr : &keys_t);
        const size_t out = (static_cast<size_t>((b - q.b0) * nh + h - q.h0) * rows + r) * cols;
        poolRows(t, block, i1 - i0, col_starts, &o.probs.data[out], &o.scores.data[out]);
        if (measured && (m->metrics || m->mean_rows > 0)) {
          measureRows(t, block, i0, i1 - i0, induction_keys, m->metrics ? &measured->sums[h - q.h0] : nullptr,
                      mean_starts, m->mean_rows, measured->first_mean_row,
                      m->mean_rows > 0 ? &measured->mean_sums[(h - q.h0) * measured->mean_rows * m->mean_cols] : nullptr);
        }
      }
      const int64_t finished = ++done;
      if (progress) {
#pragma omp critical(overview_progress)
        if (!progress(static_cast<double>(finished) / items)) cancelled = true;
      }
    }
  }
  if (cancelled) return std::nullopt;
  if (m) sumMeasures(t, *m, q, item_measures, o);
  return o;
}

}  // namespace

std::optional<Overview> computeOverview(const TiledAttention& t, int64_t rows, int64_t cols,
                                        const std::function<bool(double)>& progress,
                                        const OverviewMeasures& measures) {
  if (rows < 1 || rows > t.L || cols < 1 || cols > t.S) {
    throw InputError("overview of " + std::to_string(rows) + " x " + std::to_string(cols) + " cells for an [" +
                     std::to_string(t.L) + ", " + std::to_string(t.S) + "] map: needs 1 <= rows <= L, 1 <= cols <= S");
  }
  const int64_t mean_rows = measures.mean_rows, mean_cols = measures.mean_cols;
  if ((mean_rows > 0 || mean_cols > 0) && (mean_rows < 1 || mean_rows > t.L || mean_cols < 1 || mean_cols > t.S)) {
    throw InputError("block means of " + std::to_string(mean_rows) + " x " + std::to_string(mean_cols) +
                     " cells for an [" + std::to_string(t.L) + ", " + std::to_string(t.S) + "] map: needs 1 <= rows <= L, 1 <= cols <= S");
  }
  if (!measures.induction_keys.empty()) {
    bool fits = static_cast<int64_t>(measures.induction_keys.size()) == t.B;
    for (const std::vector<int64_t>& keys : measures.induction_keys) {
      fits = fits && static_cast<int64_t>(keys.size()) == t.L;
      for (size_t i = 0; fits && i < keys.size(); ++i) fits = keys[i] >= -1 && keys[i] < t.S;
    }
    if (!fits) throw InputError("induction keys: need [B=" + std::to_string(t.B) + "][L=" + std::to_string(t.L) +
                                "] key indices in [-1, S=" + std::to_string(t.S) + ")");
  }
  // Measures per work item (a row of the overview): sums, and at most two rows of block means
  // per head unless the means have more rows than the overview.
  const double measure_bytes =
      static_cast<double>(t.B) * t.H *
      (static_cast<double>(rows) * (sizeof(MetricSums) + 8.0 * (mean_rows / rows + 2) * mean_cols) +
       8.0 * mean_rows * mean_cols);
  checkMemory(estimateTiledBytes(t.B, t.L, t.S, t.D, 0, 0, 0, t.H, rows, cols) -
              estimateTiledBytes(t.B, t.L, t.S, t.D, 0, 0, 0, t.H, 0, 0) + static_cast<uint64_t>(measure_bytes));
  PoolRequest request{0, t.B, 0, t.H, 0, t.L, 0, t.S, rows, cols};
  request.measures = &measures;
  return poolMaps(t, request, progress);
}

std::optional<Overview> computeWindow(const TiledAttention& t, int64_t b, int64_t h, int64_t i0, int64_t rows,
                                      int64_t j0, int64_t cols, int64_t out_rows, int64_t out_cols,
                                      const std::function<bool(double)>& progress) {
  checkTileWindow(t, b, h, i0, rows, j0, cols);
  if (out_rows < 1 || out_rows > rows || out_cols < 1 || out_cols > cols) {
    throw InputError("window of " + std::to_string(rows) + " x " + std::to_string(cols) + " cells pooled to " +
                     std::to_string(out_rows) + " x " + std::to_string(out_cols) +
                     ": needs 1 <= out_rows <= rows, 1 <= out_cols <= cols");
  }
  return poolMaps(t, {b, b + 1, h, h + 1, i0, i0 + rows, j0, j0 + cols, out_rows, out_cols}, progress);
}

TiledAttention tiledFromTrace(const AttentionTrace& trace, const AttentionOptions& options) {
  if (trace.normalisers.size() != static_cast<size_t>(trace.B * trace.H * trace.L) || trace.L == 0)
    throw InputError("tiled layer: the run kept its maps, not Q, K and the row normalisers");
  TiledAttention t;
  t.B = trace.B, t.L = trace.L, t.S = trace.S, t.D = trace.D, t.H = trace.H, t.d = trace.d, t.G = trace.G;
  t.scale = trace.scale;
  t.fill = trace.fill;
  t.softcap = options.softcap.value_or(0.0f);
  t.alibi_slopes = trace.alibi_slopes;
  t.mask = maskTerms(options.mask, t.B, t.L, t.S, {}, BoolTensor(), BoolTensor());
  for (const MaskTerm& term : t.mask) t.mask_names.push_back(term.name);
  t.q = std::make_shared<const Tensor>(trace.q);
  t.k = std::make_shared<const Tensor>(trace.k);
  t.normalisers = std::make_shared<const std::vector<RowSoftmax>>(trace.normalisers);
  return t;
}

namespace {

// computeTile with the run's normalisers: Q K^T over the window's keys only, then each cell
// as the score pass makes it (scale, soft-cap, ALiBi; the mask's fill) and p = exp(s - max) / sum.
void tileFromNormalisers(const TiledAttention& t, Tile& tile) {
  const int64_t rows = tile.rows, cols = tile.cols, S = t.S, d = t.d;
  const size_t bh = static_cast<size_t>(tile.b * t.H + tile.h);
  const size_t kv = static_cast<size_t>(tile.b * t.G + kvHeadOf(tile.h, t.H, t.G));
  headScores(&t.q->data[(bh * t.L + tile.i0) * d], rows, &t.k->data[(kv * S + tile.j0) * d], cols, d,
             tile.scores.data.data(), cols);
  ScoreRule rule;
  rule.scale = t.scale;
  rule.fill = t.fill;
  rule.softcap = t.softcap;
  if (!t.alibi_slopes.empty()) rule.alibi_slope = t.alibi_slopes[tile.h];
  const float fill = rule.fillValue();
  const float empty_row_prob = t.fill == MaskFill::NegInf ? 0.0f : 1.0f / static_cast<float>(S);
#pragma omp parallel
  {
    std::vector<uint8_t> allowed(static_cast<size_t>(S)), scratch;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = tile.i0 + r;
      maskRow(t.mask, tile.b, i, S, allowed.data(), scratch);
      const RowSoftmax& row = (*t.normalisers)[bh * t.L + i];
      const float inverse_sum = row.allowed > 0 ? 1.0f / row.sum : 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = tile.j0 + c;
        const size_t cell = static_cast<size_t>(r * cols + c);
        tile.allowed.data[cell] = allowed[j];
        if (!allowed[j]) {
          tile.scores.data[cell] = fill;
          tile.probs.data[cell] = row.allowed > 0 ? 0.0f : empty_row_prob;
          continue;
        }
        float s = tile.scores.data[cell] * rule.scale;
        if (rule.softcap > 0.0f) s = rule.softcap * std::tanh(s * (1.0f / rule.softcap));
        if (rule.alibi_slope > 0.0) s -= static_cast<float>(rule.alibi_slope * static_cast<double>(std::llabs(i - j)));
        tile.scores.data[cell] = s;
        tile.probs.data[cell] = std::exp(s - row.max) * inverse_sum;
      }
    }
  }
}

}  // namespace

Tile computeTile(const TiledAttention& t, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  checkTileWindow(t, b, h, i0, rows, j0, cols);
  Tile tile;
  tile.b = b, tile.h = h, tile.i0 = i0, tile.j0 = j0, tile.rows = rows, tile.cols = cols;
  tile.scores = Tensor({rows, cols});
  tile.probs = Tensor({rows, cols});
  tile.allowed = BoolTensor({rows, cols});
  if (t.normalisers) {
    tileFromNormalisers(t, tile);
    return tile;
  }
  // Whole rows: each row's normalisers need every key. Blocks of 64 rows keep it in cache.
  const int64_t kRows = 64;
#pragma omp parallel
  {
    RowBlock block;
#pragma omp for schedule(dynamic)
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int64_t r1 = std::min(rows, r0 + kRows);
      maskRows(t, b, i0 + r0, i0 + r1, block);
      scoreRows(t, b, h, i0 + r0, i0 + r1, block);
      for (int64_t r = r0; r < r1; ++r) {
        const size_t from = static_cast<size_t>(r - r0) * t.S + j0;
        std::copy_n(&block.scores[from], cols, &tile.scores.data[r * cols]);
        std::copy_n(&block.probs[from], cols, &tile.probs.data[r * cols]);
        std::copy_n(&block.allowed[from], cols, &tile.allowed.data[r * cols]);
      }
    }
  }
  return tile;
}

uint64_t fullPathBudgetBytes() {
  return bytesFromEnvironment("ATTNSCOPE_FULL_PATH_BYTES").value_or(uint64_t{2} << 30);
}

}  // namespace attnscope
