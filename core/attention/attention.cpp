#include "attention/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "attention/kernel.h"
#include "attention/mistakes.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {


void checkData(const Tensor& t, const char* name) {
  if (static_cast<int64_t>(t.data.size()) != numel(t.shape)) {
    throw InputError(std::string(name) + " holds " + std::to_string(t.data.size()) +
                     " values but its shape " + shapeToString(t.shape) + " needs " +
                     std::to_string(numel(t.shape)));
  }
}

void checkFinite(const Tensor& t, const char* name) {
  for (size_t n = 0; n < t.data.size(); ++n) {
    if (!std::isfinite(t.data[n])) {
      throw InputError(std::string(name) + " contains " + (std::isnan(t.data[n]) ? "NaN" : "Inf") +
                       " at flat index " + std::to_string(n));
    }
  }
}

void checkRank3(const Tensor& t, const char* name, const char* layout) {
  checkData(t, name);
  if (t.shape.size() != 3) {
    throw InputError(std::string(name) + " must be " + layout + ", got shape " + shapeToString(t.shape));
  }
  for (int64_t s : t.shape) {
    if (s < 1) throw InputError(std::string(name) + " is empty: shape " + shapeToString(t.shape));
  }
}

void checkWeight(const Tensor& w, const char* name, int64_t D, int64_t fan_in, const char* input) {
  checkData(w, name);
  if (w.shape != Shape{D, fan_in}) {
    throw InputError(std::string(name) + " has shape " + shapeToString(w.shape) + " but expected " +
                     shapeToString({D, fan_in}) + " (D=" + std::to_string(D) + ", " + input + ")");
  }
}

void checkBias(const Tensor& b, const char* name, int64_t D) {
  if (b.empty() && b.shape.empty()) return;
  checkData(b, name);
  if (b.shape != Shape{D}) {
    throw InputError(std::string(name) + " has shape " + shapeToString(b.shape) + " but expected " +
                     shapeToString({D}));
  }
}

// Grouped-query attention: G = rows of w_k / d, the same for w_v, and options.kv_heads
// (when set) must agree. Errors name the weight and the shape it should have.
int64_t kvHeadCount(const AttentionInputs& in, const AttentionOptions& options, int64_t H, int64_t d, int64_t Dk,
                    int64_t Dv) {
  checkData(in.w_k, "w_k");
  checkData(in.w_v, "w_v");
  if (in.w_k.shape.size() != 2 || in.w_k.dim(1) != Dk || in.w_k.dim(0) < 1) {
    const int64_t rows = in.w_k.shape.size() == 2 && in.w_k.dim(0) > 0 ? in.w_k.dim(0) : d * H;
    throw InputError("w_k has shape " + shapeToString(in.w_k.shape) + " but expected " + shapeToString({rows, Dk}) +
                     " ([G*d, Dk], key has Dk=" + std::to_string(Dk) + ")");
  }
  if (in.w_k.dim(0) % d != 0) {
    throw InputError("w_k has " + std::to_string(in.w_k.dim(0)) + " rows, not a multiple of the head size d=" +
                     std::to_string(d) + " (D=" + std::to_string(d * H) + " / H=" + std::to_string(H) + ")");
  }
  const int64_t G = options.kv_heads > 0 ? options.kv_heads : in.w_k.dim(0) / d;
  if (G < 1 || H % G != 0) {
    throw InputError("kv_heads G=" + std::to_string(G) + " does not divide H=" + std::to_string(H) +
                     " (each K/V head serves H/G query heads)");
  }
  const std::string heads = " (G=" + std::to_string(G) + " K/V heads of d=" + std::to_string(d) + ")";
  if (in.w_k.dim(0) != G * d) {
    throw InputError("w_k has shape " + shapeToString(in.w_k.shape) + " but kv_heads needs [G*d, Dk] = " +
                     shapeToString({G * d, Dk}) + heads);
  }
  if (in.w_v.shape != Shape{G * d, Dv}) {
    throw InputError("w_v has shape " + shapeToString(in.w_v.shape) + " but expected [G*d, Dv] = " +
                     shapeToString({G * d, Dv}) + heads + ", like w_k");
  }
  return G;
}

// Gives `t` this shape, keeping its buffer when the size matches: a recompute of the same
// sizes writes into memory that is already mapped (no zero fill, no page faults).
void reshapeReusing(Tensor& t, Shape shape) {
  resizePrefaulted(t.data, static_cast<size_t>(numel(shape)));
  t.shape = std::move(shape);
}

// [B, T, H, d] -> [B, H, T, d]  (view + transpose(1, 2), then made contiguous)
void splitHeadsInto(const Tensor& x, int64_t B, int64_t T, int64_t H, int64_t d, Tensor& out) {
  reshapeReusing(out, {B, H, T, d});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const float* src = &x.data[((b * T + t) * H + h) * d];
        std::copy(src, src + d, &out.data[((b * H + h) * T + t) * d]);
      }
}

Tensor splitHeads(const Tensor& x, int64_t B, int64_t T, int64_t H, int64_t d) {
  Tensor out;
  splitHeadsInto(x, B, T, H, d, out);
  return out;
}

// [B, H, T, d] -> [B, T, H*d]  (transpose(1, 2) + contiguous().view)
void mergeHeadsInto(const Tensor& x, int64_t B, int64_t H, int64_t T, int64_t d, Tensor& out) {
  reshapeReusing(out, {B, T, H * d});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const float* src = &x.data[((b * H + h) * T + t) * d];
        std::copy(src, src + d, &out.data[((b * T + t) * H + h) * d]);
      }
}

std::string formatFloat(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::vector<std::string> indexLabels(int64_t n) {
  std::vector<std::string> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = std::to_string(i);
  return labels;
}

// Partial rotary and longrope's factor, as the RoPE stages' comment says them ("" for neither).
std::string ropeExtent(const AttentionOptions& o, int64_t d) {
  std::string extent;
  const int64_t rotated = o.rope_inv_freq.empty() ? d : 2 * static_cast<int64_t>(o.rope_inv_freq.size());
  if (rotated < d) extent += ", features 0.." + std::to_string(rotated - 1) + " of " + std::to_string(d) + " rotate";
  if (o.rope_attention_factor != 1.0) extent += ", cos and sin x " + formatFloat(static_cast<float>(o.rope_attention_factor));
  return extent;
}

// The q/k RMSNorms of a model layer (AttentionOptions::q_norm, k_norm) as stages: over each
// position's whole projection right after it (OLMo 2), or over each head's d features after
// the view (Qwen3, Gemma 3), as transformers' modeling files apply them.
void addQkNormStages(std::vector<Stage>& stages, const AttentionTrace& t, const AttentionOptions& o) {
  const int64_t B = t.B, d = t.d;
  for (const auto& [p, weight, T, heads] : {std::tuple{std::string("q"), o.q_norm, t.L, t.H}, {"k", o.k_norm, t.S, t.G}}) {
    if (!weight) continue;
    const bool whole = o.qk_norm_whole;
    const auto after = std::find_if(stages.begin(), stages.end(), [&, p = p](const Stage& s) {
      return s.name == p + (whole ? "_proj" : "_view");
    });
    if (after == stages.end()) continue;
    Stage norm{p + "_norm", whole ? "rmsnorm (whole projection)" : "rmsnorm (per head)",
               p + " = self." + p + "_norm(" + p + ")  # RMSNorm over " +
                   (whole ? "the whole projection [" + std::to_string(heads * d) + "]"
                          : "each head's d = " + std::to_string(d) + " features"),
               whole ? Shape{B, T, heads * d} : Shape{B, T, heads, d}};
    stages.insert(after + 1, std::move(norm));
  }
}

}  // namespace

std::vector<Stage> buildStages(const AttentionTrace& t, const AttentionOptions& options) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H, d = t.d, G = t.G;
  std::string scores_code = "scores = torch.matmul(q, k.transpose(-2, -1))";
  if (options.scale_mode == ScaleMode::InvSqrtD) scores_code += " / math.sqrt(d)";
  if (options.scale_mode == ScaleMode::Custom) scores_code += " * " + formatFloat(t.scale);
  const std::string fill = t.fill == MaskFill::NegInf ? "float('-inf')" : "-1e9";
  const std::string dropout_code =
      t.dropout_applied ? "probs = self.dropout(probs)  # p=" + formatFloat(options.dropout)
                        : "probs = self.dropout(probs)  # identity (eval mode or p=0)";
  std::vector<Stage> stages = {
      {"query", "input", "q  # query input", {B, L, t.Dq}},
      {"key", "input", "k  # key input", {B, S, t.Dk}},
      {"value", "input", "v  # value input", {B, S, t.Dv}},
      {"q_proj", "linear", "q = self.q_proj(q)", {B, L, D}},
      {"q_view", "view", "q = q.view(B, L, H, d)", {B, L, H, d}},
      {"q_transpose", "transpose(1,2)", "q = q.transpose(1, 2)", {B, H, L, d}},
  };
  // K and V: G heads of their own (grouped-query attention), repeated to H before Q K^T.
  const bool grouped = G != H;
  const std::string kv_heads = grouped ? "G" : "H";
  for (const char* x : {"k", "v"}) {
    const std::string p(x);
    const std::string weight = grouped ? "  # weight [G*d, D" + p + "]" : "";
    stages.push_back({p + "_proj", "linear", p + " = self." + p + "_proj(" + p + ")" + weight, {B, S, G * d}});
    stages.push_back({p + "_view", "view", p + " = " + p + ".view(B, S, " + kv_heads + ", d)", {B, S, G, d}});
    stages.push_back({p + "_transpose", "transpose(1,2)", p + " = " + p + ".transpose(1, 2)", {B, G, S, d}});
  }
  addQkNormStages(stages, t, options);
  if (options.rope) {
    const std::string rotate = options.rope_style == RopeStyle::RotateHalf ? "rotate_half" : "rotate_every_two";
    const std::string note = ", base " + formatFloat(static_cast<float>(options.rope_base)) + ropeExtent(options, d);
    stages.push_back({"q_rope", "rope", "q = q * cos + " + rotate + "(q) * sin  # positions 0..L-1" + note,
                      {B, H, L, d}});
    stages.push_back({"k_rope", "rope", "k = k * cos + " + rotate + "(k) * sin  # positions 0..S-1" + note,
                      {B, G, S, d}});
  }
  if (grouped) {
    for (const char* x : {"k", "v"}) {
      const std::string p(x);
      stages.push_back({p + "_repeat", "repeat_interleave(H/G, dim=1)",
                        p + " = " + p + ".repeat_interleave(H // G, dim=1)  # H/G = " + std::to_string(H / G),
                        {B, H, S, d}});
    }
  }
  stages.push_back({"scores", "matmul * scale", scores_code, {B, H, L, S}});
  if (options.softcap) {
    stages.push_back({"softcap", "cap * tanh(s / cap)",
                      "scores = " + formatFloat(*options.softcap) + " * torch.tanh(scores / " +
                          formatFloat(*options.softcap) + ")",
                      {B, H, L, S}});
  }
  if (options.alibi) {
    stages.push_back({"alibi", "+ alibi bias", "scores = scores + alibi  # alibi[h, i, j] = -m_h * |i - j|",
                      {B, H, L, S}});
  }
  const std::vector<Stage> tail = {
      {"masked_scores", "masked_fill", "scores = scores.masked_fill(mask == 0, " + fill + ")", {B, H, L, S}},
      {"probs", "softmax", "probs = F.softmax(scores, dim=-1)", {B, H, L, S}},
      {"dropout", "dropout", dropout_code, {B, H, L, S}},
      {"context_heads", "matmul", "context = torch.matmul(probs, v)", {B, H, L, d}},
      {"context_transpose", "transpose(1,2)", "context = context.transpose(1, 2)", {B, L, H, d}},
      {"context_view", "view", "context = context.contiguous().view(B, L, D)", {B, L, D}},
      {"output", "linear", "output = self.o_proj(context)", t.output.empty() ? Shape{B, L, D} : t.output.shape},
  };
  stages.insert(stages.end(), tail.begin(), tail.end());
  return stages;
}

uint64_t estimateTraceBytes(int64_t B, int64_t L, int64_t S, int64_t D, int64_t Dq, int64_t Dk,
                            int64_t Dv, int64_t H) {
  const double b = static_cast<double>(B), l = static_cast<double>(L), s = static_cast<double>(S);
  const double floats = b * l * Dq + b * s * (Dk + Dv)  // inputs
                        + 5.0 * b * l * D              // q_proj, q, context_heads, context, output
                        + 4.0 * b * s * D              // k_proj, v_proj, k, v
                        + 4.0 * b * H * l * s          // raw_scores, scores, probs, probs_dropped (if dropout)
                        + static_cast<double>(D) * (Dq + Dk + Dv + D);  // weights
  const double mask_bytes = 4.0 * b * l * s;  // allowed + typical components
  const double total = 4.0 * floats + mask_bytes;
  return total >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(total);
}

// ---- validation: one line naming the tensor ----
RunSizes validateInputs(const AttentionInputs& in, const AttentionOptions& options) {
  if (options.heads < 1) throw InputError("heads must be >= 1, got H=" + std::to_string(options.heads));
  checkRank3(in.query, "query", "[B, L, Dq]");
  checkRank3(in.key, "key", "[B, S, Dk]");
  checkRank3(in.value, "value", "[B, S, Dv]");
  const int64_t B = in.query.dim(0), L = in.query.dim(1), Dq = in.query.dim(2);
  const int64_t S = in.key.dim(1), Dk = in.key.dim(2), Dv = in.value.dim(2);
  if (in.key.dim(0) != B) {
    throw InputError("key has batch size " + std::to_string(in.key.dim(0)) + " but query has B=" + std::to_string(B));
  }
  if (in.value.dim(0) != B) {
    throw InputError("value has batch size " + std::to_string(in.value.dim(0)) + " but query has B=" + std::to_string(B));
  }
  if (in.value.dim(1) != S) {
    throw InputError("key and value lengths differ: key has S=" + std::to_string(S) + ", value has S=" +
                     std::to_string(in.value.dim(1)));
  }
  checkData(in.w_q, "w_q");
  if (in.w_q.shape.size() != 2) throw InputError("w_q must be [D, Dq], got shape " + shapeToString(in.w_q.shape));
  const int64_t D = in.w_q.dim(0);
  checkWeight(in.w_q, "w_q", D, Dq, ("query has Dq=" + std::to_string(Dq)).c_str());
  // w_o [Do, D]: Do = D, or the model's width when its heads are not D wide (Gemma 2:
  // 8 heads x 256 = 2048 into a 2304-wide residual stream).
  const int64_t Do = in.w_o.shape.size() == 2 && in.w_o.dim(0) > 0 ? in.w_o.dim(0) : D;
  checkWeight(in.w_o, "w_o", Do, D, "output projection is [Do, D]");
  checkBias(in.b_q, "b_q", D);
  checkBias(in.b_o, "b_o", Do);
  const int64_t H = options.heads;
  if (D < 1) throw InputError("w_q has shape " + shapeToString(in.w_q.shape) + ": model size D must be >= 1");
  if (D % H != 0) {
    throw InputError("D=" + std::to_string(D) + " is not divisible by H=" + std::to_string(H));
  }
  const int64_t d = D / H;
  const int64_t G = kvHeadCount(in, options, H, d, Dk, Dv);
  checkBias(in.b_k, "b_k", G * d);
  checkBias(in.b_v, "b_v", G * d);
  validateVariants(options, VariantSizes{H, G, d, L, S});
  checkMistakeHeads(options, H, G);
  if (!(options.dropout >= 0.0f && options.dropout < 1.0f)) {
    throw InputError("dropout p must be in [0, 1), got " + formatFloat(options.dropout));
  }
  if (options.scale_mode == ScaleMode::Custom && !std::isfinite(options.custom_scale)) {
    throw InputError("scale must be a finite number, got " + formatFloat(options.custom_scale));
  }
  const std::pair<const Tensor*, const char*> finite_checks[] = {
      {&in.query, "query"}, {&in.key, "key"}, {&in.value, "value"}, {&in.w_q, "w_q"},
      {&in.w_k, "w_k"},     {&in.w_v, "w_v"}, {&in.w_o, "w_o"},     {&in.b_q, "b_q"},
      {&in.b_k, "b_k"},     {&in.b_v, "b_v"}, {&in.b_o, "b_o"}};
  for (const auto& [tensor, name] : finite_checks) checkFinite(*tensor, name);
  if (!in.query_tokens.empty() && static_cast<int64_t>(in.query_tokens.size()) != L) {
    throw InputError("query tokens: " + std::to_string(in.query_tokens.size()) + " labels for L=" + std::to_string(L));
  }
  if (!in.key_tokens.empty() && static_cast<int64_t>(in.key_tokens.size()) != S) {
    throw InputError("key tokens: " + std::to_string(in.key_tokens.size()) + " labels for S=" + std::to_string(S));
  }
  return {B, L, S, D, H, d, G, Dq, Dk, Dv};
}

// ---- mistakes lab: what each mistake changes in the pipeline, decided in one place ----
RunPlan planRun(const AttentionOptions& options, const RunSizes& z) {
  checkMistakeSizes(options, z);
  const Mistake mistake = options.mistake;
  RunPlan plan;
  const float inv_sqrt_d = static_cast<float>(1.0 / std::sqrt(static_cast<double>(z.d)));
  switch (options.scale_mode) {
    case ScaleMode::InvSqrtD: plan.rule.scale = inv_sqrt_d; break;
    case ScaleMode::None: plan.rule.scale = 1.0f; break;
    case ScaleMode::Custom: plan.rule.scale = options.custom_scale; break;
  }
  // Both mistakes replace whatever scaling was chosen: the seed's `// math.sqrt(d)`, or none.
  if (mistake == Mistake::FloorDivisionScale) {
    plan.rule.scale = inv_sqrt_d;  // reported as the trace's scale; the scores are floored instead
    plan.rule.floor_div_by = static_cast<float>(std::sqrt(static_cast<double>(z.d)));
  }
  if (mistake == Mistake::NoScaling) plan.rule.scale = 1.0f;
  plan.rule.fill = options.fill;
  plan.rule.softcap = options.softcap.value_or(0.0f);
  if (options.alibi) plan.alibi_slopes = alibiSlopes(z.H);
  plan.shared_projection = mistake == Mistake::SharedProjection;
  plan.split_heads = mistake != Mistake::NoHeadSplit;
  plan.merge_transposed = mistake != Mistake::ReshapeWithoutTranspose;
  return plan;
}

namespace {

// ---- kernel: projections, per-head maps, context, output into the trace's buffers ----

// One GEMM over all B*T rows each; shared-linear makes k, v (and o) reuse q's layer.
void projectInputs(AttentionTrace& t, const AttentionInputs& in, const AttentionOptions& options, const RunPlan& plan) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H, d = t.d, G = t.G;
  reshapeReusing(t.q_proj, {B, L, D});
  reshapeReusing(t.k_proj, {B, S, G * d});
  reshapeReusing(t.v_proj, {B, S, G * d});
  linearInto(in.query.data.data(), B * L, in.w_q, in.b_q, t.q_proj.data.data());
  linearInto(in.key.data.data(), B * S, plan.shared_projection ? in.w_q : in.w_k,
             plan.shared_projection ? in.b_q : in.b_k, t.k_proj.data.data());
  linearInto(in.value.data.data(), B * S, plan.shared_projection ? in.w_q : in.w_v,
             plan.shared_projection ? in.b_q : in.b_v, t.v_proj.data.data());
  // K and V are split with their own length S (seed 000 wrongly used L). With the
  // no-head-split mistake these per-head views are still filled for display; the maths
  // uses the unsplit projections instead.
  splitHeadsInto(t.q_proj, B, L, H, d, t.q);
  splitHeadsInto(t.k_proj, B, S, G, d, t.k);
  splitHeadsInto(t.v_proj, B, S, G, d, t.v);
  if (options.rope) {  // after the head split, before Q K^T (Hugging Face LLaMA order)
    applyRope(t.q, options.rope_base, options.rope_style, options.rope_inv_freq);
    applyRope(t.k, options.rope_base, options.rope_style, options.rope_inv_freq);
  }
}

// Maps: [B, H, L, S]. Raw scores only when asked for (they are scores / scale where
// allowed, and rawScore() derives any cell from q and k). The cache is emptied unless the
// projections are reused and the maps keep their shape and head split.
void prepareMaps(AttentionTrace& t, const AttentionOptions& options, const RunPlan& plan, bool reuse_projections,
                 RawScoreCache* cache) {
  const Shape maps_shape{t.B, t.H, t.L, t.S};
  if (options.keep_raw_scores) reshapeReusing(t.raw_scores, maps_shape); else t.raw_scores = Tensor();
  reshapeReusing(t.scores, maps_shape);
  reshapeReusing(t.probs, maps_shape);
  if (t.dropout_applied) reshapeReusing(t.probs_dropped, maps_shape); else t.probs_dropped = Tensor();
  reshapeReusing(t.context_heads, {t.B, t.H, t.L, t.d});
  if (!cache || (reuse_projections && cache->shape == maps_shape && cache->split_heads == plan.split_heads)) return;
  const size_t size = static_cast<size_t>(numel(maps_shape));
  if (cache->size != size) {
    cache->raw.reset();  // the old buffer goes before the new one comes
    cache->raw.reset(new float[size]);  // not zero-filled: only the keys a block holds are read
    cache->size = size;
  }
  cache->spans.assign(static_cast<size_t>(t.B * t.H * rowBlocks(t.L)), RowSpan{});
  cache->shape = maps_shape;
  cache->split_heads = plan.split_heads;
}

// The mask is the same for every head: row spans [B][L] and fully masked rows once per item.
std::vector<std::vector<RowSpan>> maskRowSpans(AttentionTrace& t) {
  const int64_t B = t.B, L = t.L, S = t.S;
  t.fully_masked = BoolTensor({B, L});
  std::vector<std::vector<RowSpan>> spans(B);
  for (int64_t b = 0; b < B; ++b) {
    spans[b] = rowSpans(&t.mask.allowed.data[b * L * S], L, S);
    for (int64_t i = 0; i < L; ++i) t.fully_masked.data[b * L + i] = spans[b][i].begin == spans[b][i].end;
  }
  return spans;
}

// Where one head's map and context go: the trace's buffers and the raw-score cache.
struct HeadSlots {
  AttentionTrace& t;
  const std::vector<std::vector<RowSpan>>& spans;
  RawScoreCache* cache;

  HeadSlot operator()(int64_t b, size_t map_offset, const float* q, const float* k, const float* v, int64_t c,
                      float* ctx, int64_t ld_ctx) const {
    HeadSlot s;
    s.q = q, s.k = k, s.v = v, s.c = c;
    s.allowed = &t.mask.allowed.data[b * t.L * t.S];
    s.spans = spans[b].data();
    s.raw = t.raw_scores.empty() ? nullptr : &t.raw_scores.data[map_offset];
    if (cache && !s.raw) {
      s.cache = &cache->raw[map_offset];
      s.cached = &cache->spans[map_offset / static_cast<size_t>(t.L * t.S) * rowBlocks(t.L)];
    }
    s.scores = &t.scores.data[map_offset];
    s.probs = &t.probs.data[map_offset];
    s.dropped = t.dropout_applied ? &t.probs_dropped.data[map_offset] : nullptr;
    s.dropout_offset = map_offset;
    s.ctx = ctx, s.ld_ctx = ld_ctx;
    s.stream = streamedMaps(t.L, t.S);
    return s;
  }
};

// The no-head-split mistake: one [L, S] map per batch item from the full D (Q K^T over all
// D columns), drawn in every head slot; context = probs V over the full D, already [B, L, D].
void attendUnsplit(AttentionTrace& t, const RunPlan& plan, const DropoutRule& dropout, const HeadSlots& slot,
                   std::vector<RawScoreBlocks>& counts) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H;
  reshapeReusing(t.context, {B, L, D});
  const size_t map_size = static_cast<size_t>(L) * S;
  for (int64_t b = 0; b < B; ++b) {
    const size_t first = static_cast<size_t>(b) * H * map_size;
    counts[b * H] = attendHead(slot(b, first, &t.q_proj.data[b * L * D], &t.k_proj.data[b * S * D],
                                    &t.v_proj.data[b * S * D], D, &t.context.data[b * L * D], D),
                               L, S, plan.rule, dropout);
    for (Tensor* maps : {&t.raw_scores, &t.scores, &t.probs, &t.probs_dropped}) {
      if (maps->empty()) continue;  // raw scores not kept, or no dropout
      for (int64_t h = 1; h < H; ++h) std::copy_n(&maps->data[first], map_size, &maps->data[first + h * map_size]);
    }
  }
  splitHeadsInto(t.context, B, L, H, t.d, t.context_heads);
}

// Every (batch item, head) map on its own, in parallel when that pays; then the heads merged.
void attendHeads(AttentionTrace& t, const RunPlan& plan, const DropoutRule& dropout, const HeadSlots& slot,
                 std::vector<RawScoreBlocks>& counts) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H, d = t.d, G = t.G;
  // Threads only pay off for real work: waking them costs more than a small demo's whole
  // computation, and far more when the cores are busy with something else (the GUI).
  const int64_t BH = B * H;
  const double flops_per_head = 4.0 * static_cast<double>(L) * static_cast<double>(S) * static_cast<double>(d + 4);
  const bool parallel = BH > 1 && flops_per_head * static_cast<double>(BH) > 2e6;
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t bh = 0; bh < BH; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const int64_t kv = b * G + kvHeadOf(h, H, G);  // the [B, G, S, d] slot this head reads
    counts[bh] = attendHead(slot(b, static_cast<size_t>(bh) * L * S, &t.q.data[bh * L * d], &t.k.data[kv * S * d],
                                 &t.v.data[kv * S * d], d, &t.context_heads.data[bh * L * d], d),
                            L, S, plan.ruleForHead(h), dropout);
  }
  if (plan.merge_transposed) {
    mergeHeadsInto(t.context_heads, B, H, L, d, t.context);
  } else {
    // context.reshape(B, L, D) on [B, H, L, d]: the same row-major buffer, relabelled.
    t.context = t.context_heads;
    t.context.shape = {B, L, D};
  }
}

// `reuse_projections`: q_proj .. v already hold these inputs' projections (incremental).
// `cache` (null = none): raw scores of earlier runs, still valid when the projections are
// reused and the maps have the same shape and head split; emptied otherwise.
RawScoreBlocks runKernel(AttentionTrace& t, const AttentionInputs& in, const AttentionOptions& options,
                         const RunPlan& plan, bool reuse_projections, RawScoreCache* cache) {
  if (!reuse_projections) projectInputs(t, in, options, plan);
  prepareMaps(t, options, plan, reuse_projections, cache);
  const std::vector<std::vector<RowSpan>> spans = maskRowSpans(t);
  const DropoutRule dropout{options.dropout, options.seed};
  std::vector<RawScoreBlocks> counts(static_cast<size_t>(t.B * t.H));  // [B, H]: each map's own, no sharing between threads
  const HeadSlots slot{t, spans, cache};
  if (plan.split_heads) attendHeads(t, plan, dropout, slot, counts);
  else attendUnsplit(t, plan, dropout, slot, counts);

  reshapeReusing(t.output, {t.B, t.L, plan.shared_projection ? t.D : in.w_o.dim(0)});
  linearInto(t.context.data.data(), t.B * t.L, plan.shared_projection ? in.w_q : in.w_o,
             plan.shared_projection ? in.b_q : in.b_o, t.output.data.data());
  RawScoreBlocks total;
  for (const RawScoreBlocks& c : counts) {
    total.cached += c.cached;
    total.extended += c.extended;
    total.computed += c.computed;
  }
  return total;
}

// Fills `t` (whose buffers are reused) for these inputs.
RawScoreBlocks computeTrace(AttentionTrace& t, const AttentionInputs& in, const AttentionOptions& options,
                            bool reuse_projections, RawScoreCache* cache) {
  const RunSizes z = validateInputs(in, options);
  const RunPlan plan = planRun(options, z);
  const int64_t B = z.B, L = z.L, S = z.S, H = z.H;
  checkMemory(estimateTraceBytes(B, L, S, z.D, z.Dq, z.Dk, z.Dv, H));  // before any [B, L, S] allocation
  t.mask = buildMasks(options.mask, B, L, S, in.valid_lens, in.key_padding, in.attn_mask);
  t.mistake = options.mistake;
  t.mistake_note.clear();
  if (options.mistake == Mistake::MaskNotBroadcast) t.mistake_note = misbroadcastPadding(t.mask, B, L, S, H);

  t.B = B, t.L = L, t.S = S, t.D = z.D, t.H = H, t.d = z.d, t.Dq = z.Dq, t.Dk = z.Dk, t.Dv = z.Dv, t.G = z.G;
  t.variants = activeVariants(options, VariantSizes{H, z.G, z.d, L, S});
  t.alibi_slopes = plan.alibi_slopes;
  t.fill = options.fill;
  t.dropout_applied = options.train && options.dropout > 0.0f;
  t.scale = plan.rule.scale;
  t.query = in.query;
  t.key = in.key;
  t.value = in.value;
  const RawScoreBlocks blocks = runKernel(t, in, options, plan, reuse_projections, cache);

  t.query_tokens = in.query_tokens.empty() ? indexLabels(L) : in.query_tokens;
  t.key_tokens = in.key_tokens.empty() ? indexLabels(S) : in.key_tokens;
  t.batch_query_tokens = in.batch_query_tokens;
  t.batch_key_tokens = in.batch_key_tokens;
  t.stages = buildStages(t, options);
  markMistakeStages(t.stages, t);
  t.mistake_note = mistakeNote(t, in, t.mistake_note);
  return blocks;
}

bool sameTensor(const Tensor& a, const Tensor& b) { return a.shape == b.shape && a.data == b.data; }

}  // namespace

AttentionTrace runAttention(const AttentionInputs& in, const AttentionOptions& options) {
  AttentionTrace t;
  computeTrace(t, in, options, false, nullptr);
  return t;
}

float rawScore(const AttentionTrace& t, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!t.raw_scores.empty()) return t.raw_scores.data[((b * t.H + h) * t.L + i) * t.S + j];
  // No head split (mistake): q and k are [B, T, D] projections, one map for every head.
  const bool full = t.mistake == Mistake::NoHeadSplit;
  const int64_t c = full ? t.D : t.d;
  const float* q = full ? &t.q_proj.data[(b * t.L + i) * c] : &t.q.data[((b * t.H + h) * t.L + i) * c];
  const int64_t g = kvHeadOf(h, t.H, t.G);
  const float* k = full ? &t.k_proj.data[(b * t.S + j) * c] : &t.k.data[((b * t.G + g) * t.S + j) * c];
  double sum = 0.0;
  for (int64_t n = 0; n < c; ++n) sum += static_cast<double>(q[n]) * k[n];
  return static_cast<float>(sum);
}

AttentionWorkspace::AttentionWorkspace() = default;
AttentionWorkspace::~AttentionWorkspace() = default;
AttentionWorkspace::AttentionWorkspace(AttentionWorkspace&&) noexcept = default;
AttentionWorkspace& AttentionWorkspace::operator=(AttentionWorkspace&&) noexcept = default;

uint64_t AttentionWorkspace::rawCacheBytes() const { return raw_cache_ ? raw_cache_->size * sizeof(float) : 0; }

std::shared_ptr<const AttentionTrace> AttentionWorkspace::run(const AttentionInputs& in,
                                                              const AttentionOptions& options, bool incremental,
                                                              uint64_t raw_cache_bytes) {
  // Projections depend on the inputs, the weights and which layers the mistake shares.
  const bool shared = options.mistake == Mistake::SharedProjection;
  // RoPE rotates q and k, and kv_heads decides their split: both part of the projections.
  const bool same_rope = last_options_.rope == options.rope && last_options_.rope_base == options.rope_base &&
                         last_options_.rope_style == options.rope_style && last_options_.kv_heads == options.kv_heads &&
                         last_options_.rope_inv_freq == options.rope_inv_freq;
  const bool same_projections = incremental && last_ && last_shared_projection_ == shared && last_->H == options.heads &&
                                same_rope &&
                                sameTensor(last_->query, in.query) && sameTensor(last_->key, in.key) &&
                                sameTensor(last_->value, in.value) && sameTensor(weights_[0], in.w_q) &&
                                sameTensor(weights_[1], in.w_k) && sameTensor(weights_[2], in.w_v) &&
                                sameTensor(weights_[3], in.b_q) && sameTensor(weights_[4], in.b_k) &&
                                sameTensor(weights_[5], in.b_v);
  // A trace nobody else holds can be overwritten, the last one first (its projections).
  std::shared_ptr<AttentionTrace> target;
  for (const std::shared_ptr<AttentionTrace>& trace : traces_) {
    const bool free = trace.use_count() == (trace == last_ ? 2 : 1);  // held by traces_ (and last_) only
    if (free && (!target || trace == last_)) target = trace;
  }
  if (!target) {
    target = std::make_shared<AttentionTrace>();
    traces_.push_back(target);
  }
  // The app holds at most two (a trace and the mistakes lab's correct one) while two more
  // compute; free buffers beyond that are returned.
  if (traces_.size() > 4) {
    traces_.erase(std::remove_if(traces_.begin(), traces_.end(),
                                 [&](const std::shared_ptr<AttentionTrace>& t) {
                                   return t.use_count() == 1 && t != target && t != last_;
                                 }),
                  traces_.end());
  }
  bool reuse = false;
  if (same_projections && target != last_) {
    for (auto member : {&AttentionTrace::q_proj, &AttentionTrace::k_proj, &AttentionTrace::v_proj, &AttentionTrace::q,
                        &AttentionTrace::k, &AttentionTrace::v}) {
      (*target).*member = (*last_).*member;
    }
    reuse = true;
  } else if (same_projections) {
    reuse = true;  // overwriting the last trace itself: its projections are already there
  }
  // The raw score cache, when it fits the caller's cap; a run without it drops it (it
  // would be stale after this run's projections). Raw scores kept in the trace need none.
  const auto dim = [](const Tensor& t, size_t axis) { return t.shape.size() == 3 ? static_cast<double>(t.dim(axis)) : 0.0; };
  const double maps_bytes = 4.0 * dim(in.query, 0) * static_cast<double>(options.heads) * dim(in.query, 1) * dim(in.key, 1);
  if (!incremental || options.keep_raw_scores || maps_bytes > static_cast<double>(raw_cache_bytes)) {
    raw_cache_.reset();
  } else if (!raw_cache_) {
    raw_cache_ = std::make_unique<RawScoreCache>();
  }
  last_.reset();  // a failed run below leaves nothing to reuse
  raw_blocks_ = RawScoreBlocks();  // a failed run counts nothing
  raw_blocks_ = computeTrace(*target, in, options, reuse, raw_cache_.get());
  last_ = target;
  last_shared_projection_ = shared;
  last_options_ = options;
  weights_ = {in.w_q, in.w_k, in.w_v, in.b_q, in.b_k, in.b_v};
  projections_reused_ = reuse;
  return target;
}

Tensor absDifference(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) {
    throw InputError("absDifference: shapes differ, " + shapeToString(a.shape) + " vs " + shapeToString(b.shape));
  }
  Tensor out(a.shape);
  for (size_t n = 0; n < a.data.size(); ++n) out.data[n] = std::fabs(a.data[n] - b.data[n]);
  return out;
}

Tensor foldHeads(const Tensor& x, int64_t heads) {
  if (heads < 1) throw InputError("foldHeads: heads must be >= 1, got " + std::to_string(heads));
  if (x.shape.size() != 3) throw InputError("foldHeads: expected [B, T, D], got " + shapeToString(x.shape));
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
  if (D % heads != 0) {
    throw InputError("D=" + std::to_string(D) + " is not divisible by H=" + std::to_string(heads));
  }
  Tensor out = splitHeads(x, B, T, heads, D / heads);
  out.shape = {B * heads, T, D / heads};
  return out;
}

Tensor unfoldHeads(const Tensor& x, int64_t heads) {
  if (heads < 1) throw InputError("unfoldHeads: heads must be >= 1, got " + std::to_string(heads));
  if (x.shape.size() != 3 || x.dim(0) % heads != 0) {
    throw InputError("unfoldHeads: expected [B*H, T, d] with H=" + std::to_string(heads) + ", got " +
                     shapeToString(x.shape));
  }
  Tensor out;
  mergeHeadsInto(x, x.dim(0) / heads, heads, x.dim(1), x.dim(2), out);
  return out;
}

Tensor mergeBatchHeads(const Tensor& x) {
  if (x.shape.size() < 2) throw InputError("mergeBatchHeads: expected [B, H, ...], got " + shapeToString(x.shape));
  Tensor out = x;
  out.shape.erase(out.shape.begin());
  out.shape[0] = x.dim(0) * x.dim(1);
  return out;
}

std::vector<int64_t> repeatInterleave(const std::vector<int64_t>& valid_lens, int64_t heads) {
  std::vector<int64_t> out;
  out.reserve(valid_lens.size() * std::max<int64_t>(heads, 0));
  for (int64_t len : valid_lens)
    for (int64_t h = 0; h < heads; ++h) out.push_back(len);
  return out;
}

}  // namespace attnscope
