#include "attention/kernel.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "attention/row_gemm.h"

namespace attnscope {
namespace {

// torch.floor_divide / Python // for floats (fmod based, as ATen's div_floor_floating and
// NumPy's npy_divmod do), so the quantised scores match PyTorch value for value.
float floorDivide(float a, float b) {
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div -= 1.0f;
  if (div == 0.0f) return std::copysign(0.0f, a / b);
  float floored = std::floor(div);
  if (div - floored > 0.5f) floored += 1.0f;
  return floored;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C alone for k == 0 only with beta == 1
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void linearInto(const float* x, int64_t rows, const Tensor& w, const Tensor& b, float* y) {
  rowGemm(x, rows, WeightRows{w.data.data(), nullptr, w.dim(0), w.dim(1), 0, false, {}}, b.empty() ? nullptr : b.data.data(), y);
}

void linearInto(const float* x, int64_t rows, const Weights& w, const Tensor& b, float* y) {
  rowGemm(x, rows, w.rows(), b.empty() ? nullptr : b.data.data(), y);
}

float ScoreRule::fillValue() const {
  return fill == MaskFill::NegInf ? -std::numeric_limits<float>::infinity() : -1e9f;
}

std::vector<RowSpan> rowSpans(const uint8_t* allowed, int64_t L, int64_t S) {
  std::vector<RowSpan> spans(L);
  for (int64_t i = 0; i < L; ++i) {
    const uint8_t* row = allowed + i * S;
    const void* first = std::memchr(row, 1, S);
    if (!first) continue;  // {0, 0}: fully masked
    int64_t last = S - 1;
    while (!row[last]) --last;
    spans[i] = {static_cast<const uint8_t*>(first) - row, last + 1};
  }
  return spans;
}

RowSoftmax scoreRow(const ScoreRule& rule, int64_t i, const float* raw, const uint8_t* allowed, RowSpan span,
                    int64_t S, float* scores, float* probs) {
  const float fill = rule.fillValue();
  std::fill(scores, scores + span.begin, fill);
  std::fill(scores + span.end, scores + S, fill);
  std::fill(probs, probs + span.begin, 0.0f);
  std::fill(probs + span.end, probs + S, 0.0f);
  float scale = rule.scale;
  if (rule.transformsScores()) {
    // Scale (or the floor-div mistake), soft-cap, ALiBi: the final scores, masked next.
    const float inv_cap = rule.softcap > 0.0f ? 1.0f / rule.softcap : 0.0f;
    for (int64_t j = span.begin; j < span.end; ++j) {
      float s = rule.floor_div_by > 0.0f ? floorDivide(raw[j], rule.floor_div_by) : raw[j] * rule.scale;
      if (rule.softcap > 0.0f) s = rule.softcap * std::tanh(s * inv_cap);
      if (rule.alibi_slope > 0.0) s -= static_cast<float>(rule.alibi_slope * static_cast<double>(std::llabs(i - j)));
      scores[j] = s;
    }
    raw = scores;
    scale = 1.0f;
  }
  const RowSoftmax row = scaleMaskSoftmaxRow(raw + span.begin, allowed + span.begin, span.end - span.begin,
                                             scale, fill, scores + span.begin, probs + span.begin);
  if (row.allowed == 0) {
    // Every key masked. PyTorch gives NaN here for a -inf fill (softmax of all -inf);
    // we give probabilities 0, so context 0 and the output row equals b_o. With the
    // -1e9 fill, masked_fill + softmax gives a uniform row, as PyTorch does.
    std::fill(probs, probs + S, rule.fill == MaskFill::NegInf ? 0.0f : 1.0f / static_cast<float>(S));
  }
  return row;
}

bool dropoutKeeps(uint64_t seed, uint64_t n, float p) {
  const double u = (splitmix64(splitmix64(seed) ^ n) >> 11) * (1.0 / 9007199254740992.0);
  return u >= static_cast<double>(p);
}

namespace {

// Raw scores q k^T of rows [i0, i0 + rows) into raw ([rows, S], the block's rows): every key
// when raw scores are kept; otherwise the key tiles any row of the block may attend, only
// those the cache lacks when there is one. A cell's q.k does not depend on the rows or keys
// its call covers (row_gemm.h), so a row gets the same bits in any block, from the cache, an
// extension or a fresh run; the key tiles only say what the cache holds. kt: K^T, made once
// for all the rows when they are more than a few (the same bits either way).
void blockRawScores(const HeadSlot& slot, int64_t L, int64_t S, int64_t i0, int64_t rows, float* raw, KeysT& kt,
                    RawScoreBlocks& counts) {
  constexpr int64_t kTransposedFrom = 8;
  const int64_t c = slot.c;
  auto qk = [&](RowSpan keys) {  // raw [rows, keys] = q k^T
    if (keys.begin >= keys.end) return;
    if (L >= kTransposedFrom && kt.ld == 0) kt = transposeKeys(slot.k, S, c);
    scoreRows(slot.q + i0 * c, c, rows, slot.k, kt.ld ? &kt : nullptr, keys.begin, keys.end, c, raw + keys.begin, S);
  };
  RowSpan block{S, 0};  // keys any row of this block may attend
  for (int64_t i = i0; i < i0 + rows; ++i) {
    const RowSpan span = slot.spans[i];
    if (span.begin == span.end) continue;
    block.begin = std::min(block.begin, span.begin);
    block.end = std::max(block.end, span.end);
  }
  if (block.begin >= block.end) block = {0, 0};
  const RowSpan tiles = slot.raw ? RowSpan{0, S}
                                 : RowSpan{block.begin / kKeyTile * kKeyTile,
                                           std::min(S, (block.end + kKeyTile - 1) / kKeyTile * kKeyTile)};
  if (tiles.begin >= tiles.end) return;
  RowSpan* held = slot.cache ? &slot.cached[i0 / kRowBlock] : nullptr;
  if (held && held->begin <= tiles.begin && tiles.end <= held->end) {
    ++counts.cached;
  } else if (held && held->begin < held->end && tiles.begin <= held->end && held->begin <= tiles.end) {
    qk({tiles.begin, std::max(tiles.begin, held->begin)});  // the tiles before and after the held ones
    qk({std::min(held->end, tiles.end), tiles.end});
    *held = {std::min(held->begin, tiles.begin), std::max(held->end, tiles.end)};
    ++counts.extended;
  } else {
    qk(tiles);
    if (held) *held = tiles;
    ++counts.computed;
  }
}

}  // namespace

RawScoreBlocks attendHead(const HeadSlot& slot, int64_t L, int64_t S, const ScoreRule& rule,
                          const DropoutRule& dropout) {
  const bool uniform_fully_masked = rule.fill == MaskFill::NegBillion;
  KeysT kt;
  RawScoreBlocks counts;
  // Streamed maps, or probabilities without their scores (slot.scores null): a block's raw
  // scores, scores and probabilities in scratch [kRowBlock, S].
  const bool stream = (slot.stream || !slot.scores) && !slot.raw && !slot.cache;
  FloatBuffer block_raw(stream ? static_cast<size_t>(std::min(kRowBlock, L) * S) : 0);
  FloatBuffer block_scores(block_raw.size()), block_probs(block_raw.size());
  for (int64_t i0 = 0; i0 < L; i0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, L - i0);
    // The block's rows [rows, S]: raw scores kept, in the cache, in scratch when streaming, or
    // in place in scores; scores and probabilities in scratch when streaming.
    float* raw = stream ? block_raw.data() : (slot.raw ? slot.raw : slot.cache ? slot.cache : slot.scores) + i0 * S;
    float* scores = stream ? block_scores.data() : slot.scores + i0 * S;
    float* probs = stream ? block_probs.data() : slot.probs + i0 * S;
    blockRawScores(slot, L, S, i0, rows, raw, kt, counts);
    // Each row over its own keys: its softmax and context see that row alone.
    for (int64_t i = i0; i < i0 + rows; ++i) {
      const int64_t r = (i - i0) * S;
      const RowSoftmax row = scoreRow(rule, i, raw + r, slot.allowed + i * S, slot.spans[i], S, scores + r, probs + r);
      if (slot.normalisers) slot.normalisers[i] = row;
    }
    const float* weights = probs;
    if (slot.dropped) {
      const float keep_scale = 1.0f / (1.0f - dropout.p);
      for (int64_t n = i0 * S; n < (i0 + rows) * S; ++n) {
        slot.dropped[n] =
            dropoutKeeps(dropout.seed, slot.dropout_offset + n, dropout.p) ? probs[n - i0 * S] * keep_scale : 0.0f;
      }
      weights = slot.dropped + i0 * S;
    }
    // A fully masked row with the -1e9 fill spreads over every key, so its context needs all of V.
    RowSpan keys[kRowBlock];
    for (int64_t i = i0; i < i0 + rows; ++i) {
      const RowSpan span = slot.spans[i];
      keys[i - i0] = span.begin == span.end && uniform_fully_masked ? RowSpan{0, S} : span;
    }
    combineRowBlock(weights, S, keys, rows, slot.v, slot.c, slot.c, slot.ctx + i0 * slot.ld_ctx, slot.ld_ctx);
    if (stream) {
      if (slot.scores) streamCopy(scores, rows * S, slot.scores + i0 * S);
      streamCopy(probs, rows * S, slot.probs + i0 * S);
    }
  }
  return counts;
}

}  // namespace attnscope
