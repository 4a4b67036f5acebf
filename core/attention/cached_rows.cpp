#include "attention/cached_rows.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "attention/kernel.h"
#include "attention/variants.h"

namespace attnscope {
namespace {

// Rows [0, keep) of each of the N blocks of v, laid out [N, oldT, oldW], moved in place to
// the layout [N, T, W]; a kept row's new columns [oldW, W) get `fill`. Rows from keep on
// are left for the caller to write. Per-head vectors keep their width; maps [T, T] grow or
// shrink in both axes with T, so every row moves one way: up when growing, down otherwise.
void regrid(std::vector<float>& v, int64_t N, int64_t oldT, int64_t oldW, int64_t T, int64_t W, int64_t keep, float fill) {
  const size_t size = static_cast<size_t>(N * T * W);
  const int64_t cols = std::min(oldW, W);
  auto move = [&](int64_t n, int64_t i) {
    float* dst = v.data() + (n * T + i) * W;
    std::memmove(dst, v.data() + (n * oldT + i) * oldW, static_cast<size_t>(cols) * sizeof(float));
    std::fill(dst + cols, dst + W, fill);
  };
  const bool grows = T * W >= oldT * oldW;
  if (grows) {
    if (size > v.size()) v.resize(size);
    for (int64_t n = N - 1; n >= 0; --n)
      for (int64_t i = keep - 1; i >= 0; --i) move(n, i);
  } else {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < keep; ++i) move(n, i);
  }
  v.resize(size);
}

// t resized to [1, rows, cols] keeping its leading rows (row-major: a plain resize).
void resizeRows(Tensor& t, int64_t rows, int64_t cols) {
  t.shape = {1, rows, cols};
  t.data.resize(static_cast<size_t>(rows * cols));
}

// Rows [start, L) of x [L, heads*d] into the head-major [1, heads, L, d] tensor `heads_out`.
void splitRows(const Tensor& x, int64_t heads, int64_t d, int64_t start, int64_t L, Tensor& heads_out) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = start; i < L; ++i)
      std::copy_n(&x.data[(i * heads + h) * d], d, &heads_out.data[(h * L + i) * d]);
}

// normalisers [H, oldT] -> [H, T] keeping each head's rows [0, keep).
void keepNormaliserRows(std::vector<RowSoftmax>& normalisers, int64_t H, int64_t oldT, int64_t T, int64_t keep) {
  std::vector<RowSoftmax> kept(static_cast<size_t>(H * T));
  for (int64_t h = 0; h < H && keep > 0; ++h)
    std::copy_n(&normalisers[h * oldT], keep, &kept[h * T]);
  normalisers = std::move(kept);
}

// Maps not kept (AttentionOptions::keep_maps false): rows [start, L) of head slot s (its
// pointers at row start) one 64-row block at a time, the block's mask rows and its scores
// and probabilities in scratch: the same attendHead calls as a run that keeps the maps (each
// block is one of its iterations), so the same context bits. Only normalisers [L - start] stay.
void attendHeadWithoutMaps(HeadSlot s, const std::vector<MaskTerm>& terms, int64_t start, int64_t L,
                           const ScoreRule& rule, RowSoftmax* normalisers) {
  // Per thread, kept from head to head and run to run: fresh pages cost more than the maths.
  thread_local std::vector<uint8_t> allowed, scratch;
  thread_local std::vector<float> scores, probs;
  allowed.resize(static_cast<size_t>(kRowBlock * L));
  scores.resize(allowed.size()), probs.resize(allowed.size());
  for (int64_t i0 = start; i0 < L; i0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, L - i0), offset = i0 - start;
    for (int64_t i = i0; i < i0 + rows; ++i) maskRow(terms, 0, i, L, &allowed[(i - i0) * L], scratch);
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
// the maps are kept; otherwise it is empty and `terms` get the mask's row predicates.
std::vector<RowSpan> maskSpans(AttentionTrace& t, const AttentionOptions& o, int64_t L, std::vector<MaskTerm>& terms) {
  std::vector<RowSpan> spans;
  if (o.keep_maps) {
    t.mask = buildMasks(o.mask, 1, L, L, {}, BoolTensor(), BoolTensor());
    spans = rowSpans(t.mask.allowed.data.data(), L, L);
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

// The trace's per-position tensors and maps for L positions, keeping rows [0, keep).
void growTrace(AttentionTrace& t, int64_t L, int64_t keep, int64_t Din, int64_t D, int64_t G, int64_t Do, float fill,
               bool keep_maps) {
  const int64_t oldL = t.L, H = t.H, d = t.d;
  resizeRows(t.query, L, Din);
  resizeRows(t.q_proj, L, D);
  resizeRows(t.k_proj, L, G * d);
  resizeRows(t.v_proj, L, G * d);
  resizeRows(t.context, L, D);
  resizeRows(t.output, L, Do);
  for (auto [tensor, heads] : {std::pair{&t.q, H}, {&t.k, G}, {&t.v, G}, {&t.context_heads, H}}) {
    regrid(tensor->data, heads, oldL, d, L, d, keep, 0.0f);
    tensor->shape = {1, heads, L, d};
  }
  if (keep_maps) {
    regrid(t.scores.data, H, oldL, oldL, L, L, keep, fill);
    regrid(t.probs.data, H, oldL, oldL, L, L, keep, 0.0f);
    t.scores.shape = t.probs.shape = {1, H, L, L};
    t.normalisers.clear();
  } else {
    keepNormaliserRows(t.normalisers, H, oldL, L, keep);
    t.scores = t.probs = Tensor();
  }
  t.raw_scores = Tensor();
  t.probs_dropped = Tensor();
  t.dropout_applied = false;
}

}  // namespace

int64_t rowGridStart(int64_t position) { return position / kRowBlock * kRowBlock; }

void linearRows(const float* x, int64_t start, int64_t L, const Tensor& w, const Tensor& b, float* y) {
  const int64_t Din = w.dim(1), Dout = w.dim(0);
  for (int64_t i0 = start; i0 < L;) {
    const int64_t end = std::min(L, (i0 / kRowBlock + 1) * kRowBlock);
    linearInto(x + (i0 - start) * Din, end - i0, w, b, y + (i0 - start) * Dout);
    i0 = end;
  }
}

void attendRows(AttentionTrace& t, const AttentionInputs& w, const AttentionOptions& o, const float* x, int64_t start,
                int64_t L, const std::vector<std::string>& labels, float* out) {
  if (o.alibi) throw InputError("cached attention: ALiBi is not supported (its bias needs the full map)");
  if (start < 0 || start > t.L || start > L || start != rowGridStart(start))
    throw std::logic_error("attendRows: start " + std::to_string(start) + " is not a kept grid position");
  const int64_t H = o.heads, Din = w.w_q.dim(1), D = w.w_q.dim(0), d = D / H;
  const int64_t G = w.w_k.dim(0) / d, Do = w.w_o.dim(0);
  if (t.L == 0) {  // the first run on this trace: the weights' shapes and values, once
    AttentionInputs probe = w;
    probe.query = Tensor({1, L, Din});
    std::copy_n(x, L * Din, probe.query.data.begin());
    probe.key = probe.value = probe.query;
    validateInputs(probe, o);
  }
  const RunPlan plan = planRun(o, RunSizes{1, L, L, D, H, d, G, Din, Din, Din});
  t.H = H, t.d = d;
  growTrace(t, L, start, Din, D, G, Do, plan.rule.fillValue(), o.keep_maps);
  t.B = 1, t.L = L, t.S = L, t.D = D, t.G = G, t.Dq = t.Dk = t.Dv = Din;
  std::copy_n(x, (L - start) * Din, &t.query.data[start * Din]);
  linearRows(x, start, L, w.w_q, w.b_q, &t.q_proj.data[start * D]);
  linearRows(x, start, L, w.w_k, w.b_k, &t.k_proj.data[start * G * d]);
  linearRows(x, start, L, w.w_v, w.b_v, &t.v_proj.data[start * G * d]);
  splitRows(t.q_proj, H, d, start, L, t.q);
  splitRows(t.k_proj, G, d, start, L, t.k);
  splitRows(t.v_proj, G, d, start, L, t.v);
  if (o.rope) {  // each key rotates once, when it enters the cache
    applyRopeFrom(t.q, start, o.rope_base, o.rope_style, o.rope_inv_freq);
    applyRopeFrom(t.k, start, o.rope_base, o.rope_style, o.rope_inv_freq);
  }
  std::vector<MaskTerm> terms;  // maps not kept: the mask row by row, never [L, L]
  const std::vector<RowSpan> spans = maskSpans(t, o, L, terms);
  // Always threaded over heads (OpenBLAS then runs single-threaded in each call): the same
  // calls whatever the number of rows, so the same bits.
#pragma omp parallel for schedule(dynamic) if (H > 1)
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kv = kvHeadOf(h, H, G);
    HeadSlot s;
    s.q = &t.q.data[(h * L + start) * d];
    s.k = &t.k.data[kv * L * d];
    s.v = &t.v.data[kv * L * d];
    s.c = d;
    s.ctx = &t.context_heads.data[(h * L + start) * d];
    s.ld_ctx = d;
    if (!o.keep_maps) {
      attendHeadWithoutMaps(s, terms, start, L, plan.ruleForHead(h), &t.normalisers[h * L + start]);
      continue;
    }
    s.allowed = &t.mask.allowed.data[start * L];
    s.spans = &spans[start];
    s.scores = &t.scores.data[(h * L + start) * L];
    s.probs = &t.probs.data[(h * L + start) * L];
    attendHead(s, L - start, L, plan.ruleForHead(h), DropoutRule{});
  }
  for (int64_t i = start; i < L; ++i)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(&t.context_heads.data[(h * L + i) * d], d, &t.context.data[i * D + h * d]);
  linearRows(&t.context.data[start * D], start, L, w.w_o, w.b_o, &t.output.data[start * Do]);
  std::copy_n(&t.output.data[start * Do], (L - start) * Do, out);

  t.key = t.query;
  t.value = t.query;
  t.variants = activeVariants(o, VariantSizes{H, G, d, L, L});
  t.alibi_slopes.clear();
  t.scale = plan.rule.scale;
  t.fill = o.fill;
  t.mistake = Mistake::None;
  t.mistake_note.clear();
  t.query_tokens = labels;
  t.key_tokens = labels;
  t.stages = buildStages(t, o);
}

}  // namespace attnscope
