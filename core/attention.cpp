#include "attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include <Eigen/Dense>

namespace attnscope {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

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

// Dropout keep decision from a counter-based hash, so the result does not depend on
// which thread computes which head.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double uniform01(uint64_t seed, uint64_t counter) {
  return (splitmix64(splitmix64(seed) ^ counter) >> 11) * (1.0 / 9007199254740992.0);
}

// y [N, D] = x [N, Din] W^T + b, W [D, Din].
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, int64_t rows) {
  const int64_t D = w.dim(0), Din = w.dim(1);
  Tensor y({rows, D});
  MatrixMap out(y.data.data(), rows, D);
  out.noalias() = ConstMatrixMap(x.data.data(), rows, Din) * ConstMatrixMap(w.data.data(), D, Din).transpose();
  if (!b.empty()) out.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b.data.data(), D);
  return y;
}

// [B, T, H, d] -> [B, H, T, d]  (view + transpose(1, 2), then made contiguous)
Tensor splitHeads(const Tensor& x, int64_t B, int64_t T, int64_t H, int64_t d) {
  Tensor out({B, H, T, d});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const float* src = &x.data[((b * T + t) * H + h) * d];
        std::copy(src, src + d, &out.data[((b * H + h) * T + t) * d]);
      }
  return out;
}

// [B, H, T, d] -> [B, T, H*d]  (transpose(1, 2) + contiguous().view)
Tensor mergeHeads(const Tensor& x, int64_t B, int64_t H, int64_t T, int64_t d) {
  Tensor out({B, T, H * d});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const float* src = &x.data[((b * H + h) * T + t) * d];
        std::copy(src, src + d, &out.data[((b * T + t) * H + h) * d]);
      }
  return out;
}

std::string formatGiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1073741824.0);
  return buf;
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

std::vector<Stage> buildStages(const AttentionTrace& t, const AttentionOptions& options) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H, d = t.d;
  std::string scores_code = "scores = torch.matmul(q, k.transpose(-2, -1))";
  if (options.scale_mode == ScaleMode::InvSqrtD) scores_code += " / math.sqrt(d)";
  if (options.scale_mode == ScaleMode::Custom) scores_code += " * " + formatFloat(t.scale);
  const std::string fill = t.fill == MaskFill::NegInf ? "float('-inf')" : "-1e9";
  const std::string dropout_code =
      t.dropout_applied ? "probs = self.dropout(probs)  # p=" + formatFloat(options.dropout)
                        : "probs = self.dropout(probs)  # identity (eval mode or p=0)";
  return {
      {"query", "input", "q  # query input", {B, L, t.Dq}},
      {"key", "input", "k  # key input", {B, S, t.Dk}},
      {"value", "input", "v  # value input", {B, S, t.Dv}},
      {"q_proj", "linear", "q = self.q_proj(q)", {B, L, D}},
      {"q_view", "view", "q = q.view(B, L, H, d)", {B, L, H, d}},
      {"q_transpose", "transpose(1,2)", "q = q.transpose(1, 2)", {B, H, L, d}},
      {"k_proj", "linear", "k = self.k_proj(k)", {B, S, D}},
      {"k_view", "view", "k = k.view(B, S, H, d)", {B, S, H, d}},
      {"k_transpose", "transpose(1,2)", "k = k.transpose(1, 2)", {B, H, S, d}},
      {"v_proj", "linear", "v = self.v_proj(v)", {B, S, D}},
      {"v_view", "view", "v = v.view(B, S, H, d)", {B, S, H, d}},
      {"v_transpose", "transpose(1,2)", "v = v.transpose(1, 2)", {B, H, S, d}},
      {"scores", "matmul * scale", scores_code, {B, H, L, S}},
      {"masked_scores", "masked_fill", "scores = scores.masked_fill(mask == 0, " + fill + ")", {B, H, L, S}},
      {"probs", "softmax", "probs = F.softmax(scores, dim=-1)", {B, H, L, S}},
      {"dropout", "dropout", dropout_code, {B, H, L, S}},
      {"context_heads", "matmul", "context = torch.matmul(probs, v)", {B, H, L, d}},
      {"context_transpose", "transpose(1,2)", "context = context.transpose(1, 2)", {B, L, H, d}},
      {"context_view", "view", "context = context.contiguous().view(B, L, D)", {B, L, D}},
      {"output", "linear", "output = self.o_proj(context)", {B, L, D}},
  };
}

}  // namespace

uint64_t estimateTraceBytes(int64_t B, int64_t L, int64_t S, int64_t D, int64_t Dq, int64_t Dk,
                            int64_t Dv, int64_t H) {
  const double b = static_cast<double>(B), l = static_cast<double>(L), s = static_cast<double>(S);
  const double floats = b * l * Dq + b * s * (Dk + Dv)  // inputs
                        + 5.0 * b * l * D              // q_proj, q, context_heads, context, output
                        + 4.0 * b * s * D              // k_proj, v_proj, k, v
                        + 4.0 * b * H * l * s          // raw_scores, scores, probs, probs_dropped
                        + static_cast<double>(D) * (Dq + Dk + Dv + D);  // weights
  const double mask_bytes = 4.0 * b * l * s;  // allowed + typical components
  const double total = 4.0 * floats + mask_bytes;
  return total >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(total);
}

void checkMemory(uint64_t bytes_needed) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    unsigned long long kib = 0;  // "MemAvailable:   12345678 kB"
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) {
      const uint64_t available = static_cast<uint64_t>(kib) * 1024;
      if (bytes_needed > available) {
        throw InputError("attention for these sizes needs " + formatGiB(bytes_needed) +
                         " GiB but only " + formatGiB(available) + " GiB is available");
      }
      return;
    }
  }
  // No /proc/meminfo (not Linux): nothing to compare against, let the allocation decide.
}

AttentionTrace runAttention(const AttentionInputs& in, const AttentionOptions& options) {
  // ---- validation: one line naming the tensor ----
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
  checkWeight(in.w_k, "w_k", D, Dk, ("key has Dk=" + std::to_string(Dk)).c_str());
  checkWeight(in.w_v, "w_v", D, Dv, ("value has Dv=" + std::to_string(Dv)).c_str());
  checkWeight(in.w_o, "w_o", D, D, "output projection is [D, D]");
  checkBias(in.b_q, "b_q", D);
  checkBias(in.b_k, "b_k", D);
  checkBias(in.b_v, "b_v", D);
  checkBias(in.b_o, "b_o", D);
  const int64_t H = options.heads;
  if (D < 1) throw InputError("w_q has shape " + shapeToString(in.w_q.shape) + ": model size D must be >= 1");
  if (D % H != 0) {
    throw InputError("D=" + std::to_string(D) + " is not divisible by H=" + std::to_string(H));
  }
  const int64_t d = D / H;
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

  checkMemory(estimateTraceBytes(B, L, S, D, Dq, Dk, Dv, H));  // before any [B, L, S] allocation
  AttentionTrace t;
  t.mask = buildMasks(options.mask, B, L, S, in.valid_lens, in.key_padding, in.attn_mask);

  t.B = B, t.L = L, t.S = S, t.D = D, t.H = H, t.d = d, t.Dq = Dq, t.Dk = Dk, t.Dv = Dv;
  t.fill = options.fill;
  t.dropout_applied = options.train && options.dropout > 0.0f;
  switch (options.scale_mode) {
    case ScaleMode::InvSqrtD: t.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))); break;
    case ScaleMode::None: t.scale = 1.0f; break;
    case ScaleMode::Custom: t.scale = options.custom_scale; break;
  }
  t.query = in.query;
  t.key = in.key;
  t.value = in.value;

  // ---- projections: one GEMM over all B*T rows each ----
  t.q_proj = linear(in.query, in.w_q, in.b_q, B * L);
  t.k_proj = linear(in.key, in.w_k, in.b_k, B * S);
  t.v_proj = linear(in.value, in.w_v, in.b_v, B * S);
  t.q_proj.shape = {B, L, D};
  t.k_proj.shape = {B, S, D};
  t.v_proj.shape = {B, S, D};
  // K and V are split with their own length S (seed 000 wrongly used L).
  t.q = splitHeads(t.q_proj, B, L, H, d);
  t.k = splitHeads(t.k_proj, B, S, H, d);
  t.v = splitHeads(t.v_proj, B, S, H, d);

  // ---- per (b, h): scores, mask, softmax, dropout, context ----
  const Shape scores_shape{B, H, L, S};
  t.raw_scores = Tensor(scores_shape);
  t.scores = Tensor(scores_shape);
  t.probs = Tensor(scores_shape);
  t.probs_dropped = Tensor(scores_shape);
  t.context_heads = Tensor({B, H, L, d});
  t.fully_masked = BoolTensor({B, L});
  const float fill_value =
      options.fill == MaskFill::NegInf ? -std::numeric_limits<float>::infinity() : -1e9f;
  const float scale = t.scale;
  const float keep_scale = t.dropout_applied ? 1.0f / (1.0f - options.dropout) : 1.0f;
  const int64_t BH = B * H;
  // Mask is the same for every head, so flag fully masked rows once, outside the threads.
  for (int64_t r = 0; r < B * L; ++r) {
    const uint8_t* allowed = &t.mask.allowed.data[r * S];
    t.fully_masked.data[r] = std::find(allowed, allowed + S, 1) == allowed + S ? 1 : 0;
  }

  // Threads only pay off for real work: waking them costs more than a small demo's whole
  // computation, and far more when the cores are busy with something else (the GUI).
  const double flops_per_head = 4.0 * static_cast<double>(L) * static_cast<double>(S) * static_cast<double>(d + 4);
  const bool parallel = BH > 1 && flops_per_head * static_cast<double>(BH) > 2e6;
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t bh = 0; bh < BH; ++bh) {
    const int64_t b = bh / H;
    const size_t score_offset = static_cast<size_t>(bh) * L * S;
    ConstMatrixMap q(&t.q.data[bh * L * d], L, d);
    ConstMatrixMap k(&t.k.data[bh * S * d], S, d);
    ConstMatrixMap v(&t.v.data[bh * S * d], S, d);
    MatrixMap raw(&t.raw_scores.data[score_offset], L, S);
    raw.noalias() = q * k.transpose();
    const uint8_t* allowed_b = &t.mask.allowed.data[b * L * S];
    for (int64_t i = 0; i < L; ++i) {
      const uint8_t* allowed = allowed_b + i * S;
      const float* raw_row = &raw(i, 0);
      float* scores = &t.scores.data[score_offset + i * S];
      float* probs = &t.probs.data[score_offset + i * S];
      float row_max = -std::numeric_limits<float>::infinity();
      int64_t allowed_count = 0;
      for (int64_t j = 0; j < S; ++j) {
        scores[j] = allowed[j] ? raw_row[j] * scale : fill_value;
        if (allowed[j]) {
          row_max = std::max(row_max, scores[j]);
          ++allowed_count;
        }
      }
      if (allowed_count == 0) {
        // Every key masked. PyTorch gives NaN here for a -inf fill (softmax of all -inf);
        // we give probabilities 0, so context 0 and the output row equals b_o. With the
        // -1e9 fill, masked_fill + softmax gives a uniform row, as PyTorch does.
        const float p = options.fill == MaskFill::NegInf ? 0.0f : 1.0f / static_cast<float>(S);
        std::fill(probs, probs + S, p);
        continue;
      }
      // Max-subtracted softmax; masked entries are set to exactly 0 (never trust exp(-inf)).
      double sum = 0.0;
      for (int64_t j = 0; j < S; ++j) {
        const float e = allowed[j] ? std::exp(scores[j] - row_max) : 0.0f;
        probs[j] = e;
        sum += e;
      }
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < S; ++j) probs[j] *= inv_sum;
    }
    float* dropped = &t.probs_dropped.data[score_offset];
    const float* probs = &t.probs.data[score_offset];
    if (t.dropout_applied) {
      const double p = options.dropout;
      for (int64_t n = 0; n < L * S; ++n) {
        const bool keep = uniform01(options.seed, static_cast<uint64_t>(score_offset + n)) >= p;
        dropped[n] = keep ? probs[n] * keep_scale : 0.0f;
      }
    } else {
      std::copy(probs, probs + L * S, dropped);
    }
    MatrixMap ctx(&t.context_heads.data[bh * L * d], L, d);
    ctx.noalias() = ConstMatrixMap(dropped, L, S) * v;
  }

  t.context = mergeHeads(t.context_heads, B, H, L, d);
  t.output = linear(t.context, in.w_o, in.b_o, B * L);
  t.output.shape = {B, L, D};

  t.query_tokens = in.query_tokens.empty() ? indexLabels(L) : in.query_tokens;
  t.key_tokens = in.key_tokens.empty() ? indexLabels(S) : in.key_tokens;
  t.batch_query_tokens = in.batch_query_tokens;
  t.batch_key_tokens = in.batch_key_tokens;
  t.stages = buildStages(t, options);
  return t;
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
  return mergeHeads(x, x.dim(0) / heads, heads, x.dim(1), x.dim(2));
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
