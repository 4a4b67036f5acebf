#include "attention/cached_rows.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "attention/kernel.h"
#include "attention/mask.h"
#include "attention/row_gemm.h"
#include "attention/variants.h"

namespace attnscope {
namespace {

// Rows [0, keep) of each of the N blocks of src, laid out [N, oldT, oldW], copied into dst
// laid out [N, T, W] (another trace's storage: ModelRunner::shareTraces lent src), a kept
// row's new columns [oldW, W) = fill. Rows from keep on are left for the caller to write;
// dst's storage is reused when large enough (its old values are not kept).
void regridFrom(const FloatBuffer& src, FloatBuffer& dst, int64_t N, int64_t oldT, int64_t oldW, int64_t T, int64_t W,
                int64_t keep, float fill) {
  const size_t size = static_cast<size_t>(N * T * W);
  if (size > dst.capacity()) {
    dst.clear();  // nothing to move into the new storage
    resizePrefaulted(dst, size, std::nullopt, static_cast<size_t>(N * (T + kGrowthRoom) * (W > oldW ? W + kGrowthRoom : W)));
  }
  dst.resize(size);
  const int64_t cols = std::min(oldW, W), rows = N * keep;
#pragma omp parallel for if (rows * cols >= (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; ++r) {
    float* to = dst.data() + (r / keep * T + r % keep) * W;
    // Non-temporal stores: dst is not read first (a plain copy into other memory fetched each
    // line of it, and took twice the in-place move's time).
    streamCopy(src.data() + (r / keep * oldT + r % keep) * oldW, cols, to);
    std::fill(to + cols, to + W, fill);
  }
}

// t resized to [1, rows, cols] keeping its leading rows (row-major: a plain resize), with room
// for kGrowthRoom more rows when it grows.
void resizeRows(Tensor& t, int64_t rows, int64_t cols) {
  t.shape = {1, rows, cols};
  resizePrefaulted(t.data, static_cast<size_t>(rows * cols), 0.0f, t.data.empty() ? 0 : static_cast<size_t>((rows + kGrowthRoom) * cols));
}

// Rows [start, L) held in x [L - start, heads*d] into the head-major [1, heads, L, d] `heads_out`.
void splitRows(const FloatBuffer& x, int64_t heads, int64_t d, int64_t start, int64_t L, Tensor& heads_out) {
#pragma omp parallel for if (heads > 1 && (L - start) * heads * d >= (int64_t{1} << 16))
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = start; i < L; ++i)
      std::copy_n(&x[((i - start) * heads + h) * d], d, &heads_out.data[(h * L + i) * d]);
}

// normalisers [H, oldT] -> [H, T] keeping each head's rows [0, keep).
void keepNormaliserRows(std::vector<RowSoftmax>& normalisers, int64_t H, int64_t oldT, int64_t T, int64_t keep) {
  std::vector<RowSoftmax> kept(static_cast<size_t>(H * T));
  for (int64_t h = 0; h < H && keep > 0; ++h)
    std::copy_n(&normalisers[h * oldT], keep, &kept[h * T]);
  normalisers = std::move(kept);
}

// Mask rows [first, end) of L keys (allowed [end - first, L]) with the knocked-out (query,
// key) cells among them cleared: their score becomes the fill, their probability 0.
void clearCells(uint8_t* allowed, int64_t first, int64_t end, int64_t L, const std::vector<std::pair<int64_t, int64_t>>& cells) {
  for (const auto& [i, j] : cells)
    if (i >= first && i < end && j >= 0 && j < L) allowed[(i - first) * L + j] = 0;
}

// The heads' z rows [start, L) concatenated into rows [L - start, H d], each as its edit says
// (edits [H] or null): kept, zeroed, its mean over the L positions (in double), or replaced.
void concatHeads(const AttentionTrace& t, const HeadEdits* edits, int64_t start, int64_t L, FloatBuffer& rows) {
  const int64_t H = t.H, d = t.d, D = H * d;
#pragma omp parallel for if ((L - start) * D >= (int64_t{1} << 16))
  for (int64_t i = start; i < L; ++i)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(&t.context_heads.data[(h * L + i) * d], d, &rows[(i - start) * D + h * d]);
  for (int64_t h = 0; edits && h < static_cast<int64_t>(edits->size()); ++h) {
    const HeadEdit& e = (*edits)[h];
    if (e.z == HeadEdit::Z::Keep) continue;
    std::vector<float> mean(static_cast<size_t>(d), 0.0f);  // Zero: stays 0
    if (e.z == HeadEdit::Z::Mean) {
      std::vector<double> sum(static_cast<size_t>(d), 0.0);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t c = 0; c < d; ++c) sum[c] += t.context_heads.data[(h * L + i) * d + c];
      for (int64_t c = 0; c < d; ++c) mean[c] = static_cast<float>(sum[c] / static_cast<double>(L));
    }
    for (int64_t i = start; i < L; ++i) {
      const float* from = e.z == HeadEdit::Z::Replace ? e.z_rows + i * d : mean.data();
      std::copy_n(from, d, &rows[(i - start) * D + h * d]);
    }
  }
}

// One 64-row block's mask rows (and maskRow's scratch), scores and probabilities.
struct BlockScratch {
  std::vector<uint8_t> allowed, scratch;
  std::vector<float> scores, probs;
};

// Maps not kept (AttentionOptions::keep_maps false): rows [start, L) of head slot s (its
// pointers at row start) one 64-row block at a time, the block's mask rows and its scores
// and probabilities in scratch: the same attendHead calls as a run that keeps the maps (each
// block is one of its iterations), so the same context bits. Only normalisers [L - start] stay.
void attendHeadWithoutMaps(HeadSlot s, const std::vector<MaskTerm>& terms, int64_t start, int64_t L,
                           const ScoreRule& rule, RowSoftmax* normalisers, BlockScratch& block_scratch,
                           const HeadEdit* edit) {
  auto& [allowed, scratch, scores, probs] = block_scratch;  // kept from head to head
  allowed.resize(static_cast<size_t>(kRowBlock * L));
  scores.resize(allowed.size()), probs.resize(allowed.size());
  for (int64_t i0 = start; i0 < L; i0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, L - i0), offset = i0 - start;
    for (int64_t i = i0; i < i0 + rows; ++i) maskRow(terms, 0, i, L, &allowed[(i - i0) * L], scratch);
    if (edit) clearCells(allowed.data(), i0, i0 + rows, L, edit->knockout);
    const std::vector<RowSpan> spans = rowSpans(allowed.data(), rows, L);
    HeadSlot block = s;
    block.q += offset * s.c;
    block.allowed = allowed.data();
    block.spans = spans.data();
    block.scores = scores.data();
    block.probs = probs.data();
    block.ctx += offset * s.ld_ctx;
    block.normalisers = normalisers + offset;
    attendHead(block, rows, L, rule, DropoutRule{});
  }
}

// The mask of L positions as row spans, and t.fully_masked. t.mask holds the [L, L] mask when
// the maps are kept (from `shared` when it holds this spec and length; built into it
// otherwise); otherwise it is empty and `terms` get the mask's row predicates.
std::vector<RowSpan> maskSpans(AttentionTrace& t, const AttentionOptions& o, int64_t L, std::vector<MaskTerm>& terms,
                               RunMasks* shared) {
  std::vector<RowSpan> spans;
  if (o.keep_maps) {
    RunMasks own;
    RunMasks& m = shared ? *shared : own;
    if (m.L != L || !(m.spec == o.mask)) {
      m = RunMasks{o.mask, L, buildMasks(o.mask, 1, L, L, {}, BoolTensor(), BoolTensor()), {}};
      m.spans = rowSpans(m.set.allowed.data.data(), L, L);
    }
    t.mask = m.set;
    spans = m.spans;
  } else {
    t.mask = MaskSet();
    terms = maskTerms(o.mask, 1, L, L, {}, BoolTensor(), BoolTensor());
    std::vector<uint8_t> row(static_cast<size_t>(L)), scratch;
    for (int64_t i = 0; i < L; ++i) {
      maskRow(terms, 0, i, L, row.data(), scratch);
      spans.push_back(rowSpans(row.data(), 1, L).front());
    }
  }
  t.fully_masked = BoolTensor({1, L});
  for (int64_t i = 0; i < L; ++i) t.fully_masked.data[i] = spans[i].begin == spans[i].end;
  return spans;
}

// The trace's per-position tensors and maps for L positions, keeping rows [0, keep): in place,
// or copied from `from` (the last run's trace, lent: t is other storage, written whole).
void growTrace(AttentionTrace& t, const AttentionTrace* from, int64_t L, int64_t keep, int64_t Din, int64_t G,
               int64_t Do, float fill, bool keep_maps, bool keep_scores) {
  const int64_t oldL = from ? from->L : t.L, H = t.H, d = t.d;
  // Tensor `member` of t as [1, N, L, W] (N = 0: [1, L, W]) from oldW columns, keeping rows [0, keep).
  auto keepRows = [&](Tensor AttentionTrace::*member, int64_t N, int64_t oldW, int64_t W, float value) {
    Tensor& to = t.*member;
    if (from) {
      regridFrom((from->*member).data, to.data, std::max<int64_t>(N, 1), oldL, oldW, L, W, keep, value);
    } else if (N == 0) {
      resizeRows(to, L, W);  // row-major: the kept rows stay where they are
    } else {
      regrid(to.data, N, oldL, oldW, L, W, keep, value);
    }
    to.shape = N == 0 ? Shape{1, L, W} : Shape{1, N, L, W};
  };
  keepRows(&AttentionTrace::query, 0, Din, Din, 0.0f);
  keepRows(&AttentionTrace::output, 0, Do, Do, 0.0f);
  // Projections and the concatenated context only pass through (scratch): the head-major
  // q, k, v and context_heads hold the same values.
  t.q_proj = t.k_proj = t.v_proj = t.context = Tensor();
  keepRows(&AttentionTrace::q, H, d, d, 0.0f);
  keepRows(&AttentionTrace::k, G, d, d, 0.0f);
  keepRows(&AttentionTrace::v, G, d, d, 0.0f);
  keepRows(&AttentionTrace::context_heads, H, d, d, 0.0f);
  if (keep_maps) {
    if (keep_scores) {
      keepRows(&AttentionTrace::scores, H, oldL, L, fill);
    } else {
      t.scores = Tensor();
    }
    keepRows(&AttentionTrace::probs, H, oldL, L, 0.0f);
    t.normalisers.clear();
  } else {
    if (from) t.normalisers = from->normalisers;
    keepNormaliserRows(t.normalisers, H, oldL, L, keep);
    t.scores = t.probs = Tensor();
  }
  t.raw_scores = Tensor();
  t.probs_dropped = Tensor();
  t.dropout_applied = false;
}

// What a run of a layer records besides its rows: inputs, variants, scale, labels, stages.
void finishTrace(AttentionTrace& t, const AttentionOptions& o, const RunPlan& plan, const std::vector<std::string>& labels) {
  t.key = t.value = Tensor();  // self-attention: key and value are `query` (not copied: 2 L Din floats a layer)
  t.variants = activeVariants(o, VariantSizes{t.H, t.G, t.d, t.L, t.L});
  t.alibi_slopes.clear();
  t.scale = plan.rule.scale;
  t.fill = o.fill;
  t.mistake = Mistake::None;
  t.mistake_note.clear();
  t.query_tokens = labels;
  t.key_tokens = labels;
  t.stages = buildStages(t, o);
}

// Each of `vectors` rows of d features (one head at one position) RMS-normalised and scaled
// by weight [d] (AttentionOptions::q_norm); statistics in double, as the models' norms.
void normHeads(float* x, int64_t vectors, int64_t d, const float* weight, double eps) {
  if (!weight) return;
  for (int64_t n = 0; n < vectors; ++n) {
    float* v = &x[n * d];
    double squares = 0.0;
    for (int64_t c = 0; c < d; ++c) squares += static_cast<double>(v[c]) * v[c];
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(d) + eps);
    for (int64_t c = 0; c < d; ++c) v[c] = static_cast<float>(v[c] * inv * weight[c]);
  }
}

// normHeads on the positions [first, T) of every head of x [B, heads, T, d].
void normHeadsFrom(Tensor& x, int64_t first, const float* weight, double eps) {
  if (!weight) return;
  const int64_t N = x.dim(0) * x.dim(1), T = x.dim(2), d = x.dim(3);
  for (int64_t n = 0; n < N; ++n) normHeads(&x.data[(n * T + first) * d], T - first, d, weight, eps);
}

// The rotated features (the first 2 x rope_inv_freq's, or all d) of `vectors` rows of d times
// the RoPE's attention factor (AttentionOptions::rope_attention_factor).
void scaleRotated(float* x, int64_t vectors, int64_t d, const AttentionOptions& o) {
  if (o.rope_attention_factor == 1.0) return;
  const int64_t rotated = o.rope_inv_freq.empty() ? d : 2 * static_cast<int64_t>(o.rope_inv_freq.size());
  const float factor = static_cast<float>(o.rope_attention_factor);
  for (int64_t n = 0; n < vectors; ++n)
    for (int64_t c = 0; c < rotated; ++c) x[n * d + c] *= factor;
}

// scaleRotated on the positions [first, T) of every head of x [B, heads, T, d].
void scaleRotatedFrom(Tensor& x, int64_t first, const AttentionOptions& o) {
  const int64_t N = x.dim(0) * x.dim(1), T = x.dim(2), d = x.dim(3);
  for (int64_t n = 0; n < N; ++n) scaleRotated(&x.data[(n * T + first) * d], T - first, d, o);
}

// A layer's projections against its options: InputError for shapes that do not fit.
void checkProjections(const Projections& w, const AttentionOptions& o) {
  auto shape = [](const WeightRows& r) { return "[" + std::to_string(r.N) + ", " + std::to_string(r.K) + "]"; };
  const int64_t H = o.heads;
  if (H < 1 || w.q.N < 1 || w.q.N % H != 0)
    throw InputError("w_q " + shape(w.q) + " does not split into H=" + std::to_string(H) + " heads");
  const int64_t d = w.q.N / H, G = o.kv_heads > 0 ? o.kv_heads : w.k.N / d;
  if (G < 1 || H % G != 0) throw InputError("H=" + std::to_string(H) + " is not a multiple of the K/V heads G=" + std::to_string(G));
  for (const auto& [r, name] : {std::pair{&w.k, "w_k"}, {&w.v, "w_v"}})
    if (r->N != G * d || r->K != w.q.K)
      throw InputError(std::string(name) + " " + shape(*r) + " does not fit G=" + std::to_string(G) + " heads of " +
                       std::to_string(d) + " over the input width " + std::to_string(w.q.K));
  if (w.o.K != w.q.N || w.o.N < 1) throw InputError("w_o " + shape(w.o) + " does not take the heads' width " + std::to_string(w.q.N));
}

}  // namespace

Projections projectionsOf(const AttentionInputs& in) {
  auto rows = [](const Tensor& w) { return WeightRows{w.data.data(), nullptr, w.dim(0), w.dim(1), 0, false, {}}; };
  auto bias = [](const Tensor& b) { return b.empty() ? nullptr : b.data.data(); };
  return {rows(in.w_q), rows(in.w_k), rows(in.w_v), rows(in.w_o), bias(in.b_q), bias(in.b_k), bias(in.b_v), bias(in.b_o)};
}

void attendRows(AttentionTrace& t, const Projections& w, const AttentionOptions& o, const float* x, int64_t start,
                int64_t L, const std::vector<std::string>& labels, float* out, RunMasks* masks, const HeadEdits* edits,
                const AttentionTrace* kept) {
  if (o.alibi) throw InputError("cached attention: ALiBi is not supported (its bias needs the full map)");
  const int64_t kept_L = kept ? kept->L : t.L;
  if (start < 0 || start > kept_L || start > L)
    throw std::logic_error("attendRows: start " + std::to_string(start) + " is not a kept position");
  const int64_t H = o.heads, Din = w.q.K, D = w.q.N, d = H > 0 ? D / H : 0;
  const int64_t G = d > 0 ? w.k.N / d : 0, Do = w.o.N;
  if (kept_L == 0) checkProjections(w, o);  // the first run on this trace: the weights' shapes, once
  const RunPlan plan = planRun(o, RunSizes{1, L, L, D, H, d, G, Din, Din, Din});
  t.H = H, t.d = d;
  growTrace(t, kept, L, start, Din, G, Do, plan.rule.fillValue(), o.keep_maps, o.keep_scores);
  t.B = 1, t.L = L, t.S = L, t.D = D, t.G = G, t.Dq = t.Dk = t.Dv = Din;
  std::copy_n(x, (L - start) * Din, &t.query.data[start * Din]);
  FloatBuffer rows(static_cast<size_t>((L - start) * D));  // [L - start, D or G d]: a projection, then the context
  const float* whole_norm[] = {o.qk_norm_whole ? o.q_norm : nullptr, o.qk_norm_whole ? o.k_norm : nullptr, nullptr};
  int part = 0;
  for (auto [weights, bias, heads, out] : {std::tuple{&w.q, w.b_q, H, &t.q}, {&w.k, w.b_k, G, &t.k}, {&w.v, w.b_v, G, &t.v}}) {
    rowGemm(x, L - start, *weights, bias, rows.data());
    normHeads(rows.data(), L - start, heads * d, whole_norm[part++], o.qk_norm_eps);  // each row whole (OLMo 2)
    splitRows(rows, heads, d, start, L, *out);
  }
  if (!o.qk_norm_whole) {
    normHeadsFrom(t.q, start, o.q_norm, o.qk_norm_eps);
    normHeadsFrom(t.k, start, o.k_norm, o.qk_norm_eps);
  }
  if (o.rope) {  // each key rotates once, when it enters the cache
    applyRopeFrom(t.q, start, o.rope_base, o.rope_style, o.rope_inv_freq);
    applyRopeFrom(t.k, start, o.rope_base, o.rope_style, o.rope_inv_freq);
    scaleRotatedFrom(t.q, start, o);
    scaleRotatedFrom(t.k, start, o);
  }
  std::vector<MaskTerm> terms;  // maps not kept: the mask row by row, never [L, L]
  const std::vector<RowSpan> spans = maskSpans(t, o, L, terms, masks);
  // Threaded over heads (each head's row GEMMs on one thread). Maps not kept: each thread
  // scores its heads' blocks in one scratch, reused from head to head (fresh pages cost more
  // than the maths).
#pragma omp parallel if (H > 1)
  {
  BlockScratch scratch;
#pragma omp for schedule(dynamic)
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kv = kvHeadOf(h, H, G);
    HeadSlot s;
    s.q = &t.q.data[(h * L + start) * d];
    s.k = &t.k.data[kv * L * d];
    s.v = &t.v.data[kv * L * d];
    s.c = d;
    s.ctx = &t.context_heads.data[(h * L + start) * d];
    s.ld_ctx = d;
    const HeadEdit* edit = edits && !(*edits)[h].knockout.empty() ? &(*edits)[h] : nullptr;
    if (!o.keep_maps) {
      attendHeadWithoutMaps(s, terms, start, L, plan.ruleForHead(h), &t.normalisers[h * L + start], scratch, edit);
      continue;
    }
    std::vector<uint8_t> knocked;  // [L - start, L]: this head's mask rows, its knocked-out cells cleared
    if (edit) {
      knocked.assign(t.mask.allowed.data.begin() + start * L, t.mask.allowed.data.begin() + L * L);
      clearCells(knocked.data(), start, L, L, edit->knockout);
    }
    s.allowed = edit ? knocked.data() : &t.mask.allowed.data[start * L];
    s.spans = &spans[start];
    s.scores = o.keep_scores ? &t.scores.data[(h * L + start) * L] : nullptr;
    s.probs = &t.probs.data[(h * L + start) * L];
    s.stream = streamedMaps(L - start, L);
    attendHead(s, L - start, L, plan.ruleForHead(h), DropoutRule{});
  }
  }
  outputRows(t, w.o, w.b_o, edits, start, rows, out);
  finishTrace(t, o, plan, labels);
}

void outputRows(AttentionTrace& t, const WeightRows& o, const float* b_o, const HeadEdits* edits, int64_t start,
                FloatBuffer& rows, float* out) {
  const int64_t L = t.L, Do = o.N;
  rows.resize(static_cast<size_t>((L - start) * t.H * t.d));
  concatHeads(t, edits, start, L, rows);
  rowGemm(rows.data(), L - start, o, b_o, &t.output.data[start * Do]);
  std::copy_n(&t.output.data[start * Do], (L - start) * Do, out);
}

namespace {

// One decoded position's values, each the row a run would store for it.
struct DecodedRow {
  const float* query;     // [Din] the layer's input
  const float* v;         // [G d]
  const float* q;         // [H d] after RoPE
  const float* k;         // [G d] after RoPE
  const float* context;   // [D] heads concatenated
  const float* scores;    // [H, S] masked keys (evicted ones too) = fill
  const float* probs;     // [H, S]
  const float* output;    // [Do]
};

// The trace grown by position S - 1 (its maps re-laid out for S positions) holding `row`.
void appendRow(AttentionTrace& t, const AttentionOptions& o, const RunPlan& plan, const DecodedRow& row,
               const std::vector<std::string>& labels, RunMasks* masks) {
  const int64_t p = t.L, S = p + 1, H = t.H, d = t.d, G = t.G;
  const int64_t Din = t.query.dim(2), Do = t.output.dim(2);
  const bool scores = !t.scores.empty();  // a run that kept its scores keeps the stepped ones
  growTrace(t, nullptr, S, p, Din, G, Do, plan.rule.fillValue(), true, scores);
  t.L = t.S = S;
  std::copy_n(row.query, Din, &t.query.data[p * Din]);
  std::copy_n(row.output, Do, &t.output.data[p * Do]);
  for (int64_t h = 0; h < H; ++h) {
    std::copy_n(row.q + h * d, d, &t.q.data[(h * S + p) * d]);
    std::copy_n(row.context + h * d, d, &t.context_heads.data[(h * S + p) * d]);
    if (scores) std::copy_n(row.scores + h * S, S, &t.scores.data[(h * S + p) * S]);
    std::copy_n(row.probs + h * S, S, &t.probs.data[(h * S + p) * S]);
  }
  for (int64_t g = 0; g < G; ++g) {
    std::copy_n(row.k + g * d, d, &t.k.data[(g * S + p) * d]);
    std::copy_n(row.v + g * d, d, &t.v.data[(g * S + p) * d]);
  }
  std::vector<MaskTerm> terms;
  maskSpans(t, o, S, terms, masks);
  finishTrace(t, o, plan, labels);
}

// Slots for the last W + 1 positions when the mask is a causal sliding window (row p sees
// [p - W, p] and the sinks, so a key that leaves never returns); -1 when some later row may
// see any key (no window, or a term that is not a window).
int64_t ringSlots(const MaskSpec& m) {
  if (m.prefix >= 0 || !m.segments.empty() || m.padding || m.causal_bottom_right) return -1;
  int64_t w = -1;
  for (int64_t term : {m.causal_window, m.window})
    if (term >= 0) w = w < 0 ? term : std::min(w, term);
  return w < 0 ? -1 : w + 1;
}

// The slot position p goes to (the capacity doubles first where every position stays).
int64_t slotFor(DecodeCache& c, int64_t p) {
  if (c.ring > 0) return p < c.sinks ? p : c.sinks + (p - c.sinks) % c.ring;
  if (p >= c.capacity) {
    const int64_t grown = std::max<int64_t>(2 * c.capacity, kRowBlock);
    for (std::vector<float>* v : {&c.k, &c.v}) {
      std::vector<float> moved(static_cast<size_t>(c.G * grown * c.d), 0.0f);
      for (int64_t g = 0; g < c.G; ++g) std::copy_n(&(*v)[g * c.capacity * c.d], c.capacity * c.d, &moved[g * grown * c.d]);
      *v = std::move(moved);
    }
    c.positions.resize(static_cast<size_t>(grown), -1);
    c.capacity = grown;
  }
  return p;
}

// K/V head rows k, v: [G, d] of position p into its slot.
void store(DecodeCache& c, int64_t p, const float* k, const float* v) {
  const int64_t slot = slotFor(c, p);
  for (int64_t g = 0; g < c.G; ++g) {
    std::copy_n(k + g * c.d, c.d, &c.k[(g * c.capacity + slot) * c.d]);
    std::copy_n(v + g * c.d, c.d, &c.v[(g * c.capacity + slot) * c.d]);
  }
  c.positions[slot] = p;
}

}  // namespace

int64_t DecodeCache::entries() const {
  return std::count_if(positions.begin(), positions.end(), [](int64_t p) { return p >= 0; });
}

void startDecode(const AttentionTrace& t, const MaskSpec& mask, DecodeCache& c) {
  c = DecodeCache();
  c.G = t.G, c.d = t.d;
  c.ring = ringSlots(mask);
  c.sinks = c.ring > 0 ? std::max<int64_t>(mask.sinks, 0) : 0;
  c.capacity = c.ring > 0 ? c.sinks + c.ring : std::max<int64_t>(2 * t.L, kRowBlock);
  c.k.assign(static_cast<size_t>(c.G * c.capacity * c.d), 0.0f);
  c.v.assign(c.k.size(), 0.0f);
  c.positions.assign(static_cast<size_t>(c.capacity), -1);
  for (int64_t p = 0; p < t.L; ++p) {  // the trace's K/V: [1, G, L, d]
    std::vector<float> k(c.G * c.d), v(c.G * c.d);
    for (int64_t g = 0; g < c.G; ++g) {
      std::copy_n(&t.k.data[(g * t.L + p) * c.d], c.d, &k[g * c.d]);
      std::copy_n(&t.v.data[(g * t.L + p) * c.d], c.d, &v[g * c.d]);
    }
    store(c, p, k.data(), v.data());
  }
  c.L = t.L;
}

void decodeRow(DecodeCache& c, const Projections& w, const AttentionOptions& o, const float* x, float* probs,
               float* out, const TraceRow& into) {
  const int64_t H = o.heads, Din = w.q.K, D = w.q.N, d = c.d, G = c.G;
  const int64_t p = c.L, S = p + 1;
  // q: [H, d] and k, v: [G, d], this position's (head-major rows of one projection each)
  std::vector<float> q(D), k(G * d), v(G * d), ctx(D);
  rowGemm(x, 1, w.q, w.b_q, q.data());
  rowGemm(x, 1, w.k, w.b_k, k.data());
  rowGemm(x, 1, w.v, w.b_v, v.data());
  const int64_t q_vectors = o.qk_norm_whole ? 1 : H, k_vectors = o.qk_norm_whole ? 1 : G;  // per head, or whole
  normHeads(q.data(), q_vectors, H * d / q_vectors, o.q_norm, o.qk_norm_eps);
  normHeads(k.data(), k_vectors, G * d / k_vectors, o.k_norm, o.qk_norm_eps);
  if (o.rope) {
    for (int64_t h = 0; h < H; ++h) rotateAt(&q[h * d], d, p, o.rope_base, o.rope_style, o.rope_inv_freq);
    for (int64_t g = 0; g < G; ++g) rotateAt(&k[g * d], d, p, o.rope_base, o.rope_style, o.rope_inv_freq);
    scaleRotated(q.data(), H, d, o);
    scaleRotated(k.data(), G, d, o);
  }
  store(c, p, k.data(), v.data());
  c.L = S;
  // allowed: [S], the mask's row p in a [S, S] run; per slot, the key it holds
  std::vector<uint8_t> allowed(S), scratch;
  maskRow(maskTerms(o.mask, 1, S, S, {}, BoolTensor(), BoolTensor()), 0, p, S, allowed.data(), scratch);
  const int64_t slots = c.capacity;
  std::vector<uint8_t> slot_allowed(slots);
  for (int64_t e = 0; e < slots; ++e) slot_allowed[e] = c.positions[e] >= 0 && allowed[c.positions[e]];
  const std::vector<RowSpan> span = rowSpans(slot_allowed.data(), 1, slots);
  const RunPlan plan = planRun(o, RunSizes{1, S, S, D, H, d, G, Din, Din, Din});
  std::vector<float> score_row(into.trace ? H * S : 0, plan.rule.fillValue());
  std::fill(probs, probs + H * S, 0.0f);
  // The heads on every thread (each its own row of probs and slice of ctx): between the
  // projections' parallel GEMMs, one thread alone would leave the other waiting.
#pragma omp parallel if (H > 1 && H * slots * d >= (int64_t{1} << 16))
  {
    std::vector<float> scores(slots), slot_probs(slots);
#pragma omp for schedule(static)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kv = kvHeadOf(h, H, G);
      HeadSlot s;
      s.q = &q[h * d];
      s.k = &c.k[kv * c.capacity * d];
      s.v = &c.v[kv * c.capacity * d];
      s.c = d;
      s.allowed = slot_allowed.data();
      s.spans = span.data();
      s.scores = scores.data();
      s.probs = slot_probs.data();
      s.ctx = &ctx[h * d];
      s.ld_ctx = d;
      attendHead(s, 1, slots, plan.ruleForHead(h), DropoutRule{});
      for (int64_t e = 0; e < slots; ++e)
        if (c.positions[e] >= 0) {
          probs[h * S + c.positions[e]] = slot_probs[e];
          if (into.trace && slot_allowed[e]) score_row[h * S + c.positions[e]] = scores[e];
        }
    }
  }
  rowGemm(ctx.data(), 1, w.o, w.b_o, out);
  if (!into.trace) return;
  const DecodedRow row{x, v.data(), q.data(), k.data(), ctx.data(), score_row.data(), probs, out};
  appendRow(*into.trace, o, plan, row, *into.labels, into.masks);
}

}  // namespace attnscope
