// The forward pass of a model (model.h), following its family's declaration.
#include <algorithm>
#include <cmath>

#include "attention/cached_rows.h"
#include "attention/kernel.h"
#include "model/activations.h"
#include "model/model.h"

namespace attnscope {
namespace {

// Tensor t resized to [rows, cols] (its buffer is kept when large enough).
void reshape(Tensor& t, int64_t rows, int64_t cols) {
  t.shape = {rows, cols};
  t.data.resize(rows * cols);
}

// Element counts from which a loop is worth both threads.
constexpr int64_t kThreadedWork = int64_t{1} << 16;

// Sum of f(row[c]) over c < D in double, in 8 partial sums added in a fixed order: a single
// chain of dependent double adds took most of the norms' time (a row's bits do not depend on
// its thread or on the rows beside it).
template <typename F>
double rowSum(const float* row, int64_t D, F f) {
  constexpr int64_t kLanes = 8;
  double partial[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= D; c += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) partial[k] += f(row[c + k]);
  for (; c < D; ++c) partial[c % kLanes] += f(row[c]);
  double sum = 0.0;
  for (double p : partial) sum += p;
  return sum;
}

// attnscope-model/1's LayerNorm of one row: mean and biased variance in double, summed in
// order, the affine step in float32 (the arithmetic its shipped models were checked with).
void floatAffineLayerNorm(const float* row, int64_t D, const float* weight, const float* bias, double eps, float* o) {
  double mean = 0.0;
  for (int64_t c = 0; c < D; ++c) mean += row[c];
  mean /= static_cast<double>(D);
  double var = 0.0;
  for (int64_t c = 0; c < D; ++c) var += (row[c] - mean) * (row[c] - mean);
  var /= static_cast<double>(D);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (int64_t c = 0; c < D; ++c) o[c] = static_cast<float>((row[c] - mean) * inv) * weight[c] + bias[c];
}

// out [L, D] = norm(x [L, D]); statistics in double (transformers upcasts to float32). Rows
// on both threads.
void applyNorm(Norm kind, const NormWeights& w, double eps, const Tensor& x, Tensor& out) {
  const int64_t L = x.dim(0), D = x.dim(1);
  reshape(out, L, D);
  const float* weight = w.weight.data.data();
  const float* bias = w.bias.empty() ? nullptr : w.bias.data.data();
  const bool plus_one = kind == Norm::RmsNormPlusOne;
#pragma omp parallel for if (L * D >= kThreadedWork)
  for (int64_t t = 0; t < L; ++t) {
    const float* row = &x.data[t * D];
    if (kind == Norm::LayerNormFloatAffine) {
      floatAffineLayerNorm(row, D, weight, bias, eps, &out.data[t * D]);
      continue;
    }
    const double mean =
        kind == Norm::LayerNorm ? rowSum(row, D, [](float v) { return double{v}; }) / static_cast<double>(D) : 0.0;
    const double var = rowSum(row, D, [mean](float v) { return (v - mean) * (v - mean); });
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(D) + eps);
    float* o = &out.data[t * D];
    for (int64_t c = 0; c < D; ++c) {
      const double scale = plus_one ? 1.0 + weight[c] : weight[c];
      o[c] = static_cast<float>((row[c] - mean) * inv * scale + (bias ? bias[c] : 0.0));
    }
  }
}

// x normed into out, or x itself where the layer has no such norm (OLMo 2: no pre-norms).
const Tensor& normedOrSelf(Norm kind, const NormWeights& w, double eps, const Tensor& x, Tensor& out) {
  if (w.empty()) return x;
  applyNorm(kind, w, eps, x, out);
  return out;
}

// out = x w^T + b (x [rows, in], out [rows, out]).
void linear(const Tensor& x, const Linear& w, Tensor& out) {
  reshape(out, x.dim(0), w.weight.dim(0));
  linearInto(x.data.data(), x.dim(0), w.weight, w.bias, out.data.data());
}

void addInto(Tensor& x, const Tensor& y) {
  const int64_t n = static_cast<int64_t>(x.data.size());
#pragma omp parallel for if (n >= kThreadedWork)
  for (int64_t k = 0; k < n; ++k) x.data[k] += y.data[k];
}

}  // namespace

AttentionOptions layerOptions(const ModelConfig& c, int64_t i, int64_t L) {
  AttentionOptions o;
  o.heads = c.heads;
  o.kv_heads = c.kv_heads;
  o.scale_mode = ScaleMode::Custom;
  o.custom_scale = static_cast<float>(c.attn_scale);
  o.fill = MaskFill::NegInf;
  o.keep_raw_scores = false;
  o.softcap = c.attn_softcap ? std::optional<float>(static_cast<float>(*c.attn_softcap)) : std::nullopt;
  if (c.family->causal) {
    o.mask.causal = true;
    o.mask.causal_window = c.window[i];
  }
  if (c.rotary[i]) {
    o.rope = true;
    const RopeParams rope = ropeOf(c, i);  // the layer's own where RoPE differs per layer type
    o.rope_base = rope.theta;
    o.rope_style = RopeStyle::RotateHalf;
    o.rope_inv_freq = rope.invFreqAt(L);
    o.rope_attention_factor = rope.attention_factor;
  }
  return o;
}

ModelRunner::ModelRunner(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  for (int64_t i = 0; i < model_->config.n_layers; ++i) {
    AttentionOptions o = layerOptions(model_->config, i);
    const LayerWeights& layer = model_->layers[i];
    if (!layer.q_norm.empty()) o.q_norm = layer.q_norm.weight.data.data();
    if (!layer.k_norm.empty()) o.k_norm = layer.k_norm.weight.data.data();
    o.qk_norm_eps = model_->config.norm_eps;
    o.qk_norm_whole = model_->config.family->names.has(Role::QProjNorm);
    options_.push_back(std::move(o));
  }
}

void ModelRunner::setCacheWindow(const CacheWindow& cache) {
  bool changed = false;
  for (int64_t i = 0; i < model_->config.n_layers; ++i) {
    const MaskSpec mask = withCacheWindow(layerOptions(model_->config, i).mask, cache);
    changed = changed || !(mask == options_[i].mask);
    options_[i].mask = mask;
  }
  if (changed) reset();  // the kept rows were computed under the other mask
}

// Past longrope's original context every position rotates by the long factors, within it by
// the short ones: rows kept from a run on the other side rotated otherwise.
void ModelRunner::chooseRopeFactors(int64_t L) {
  const bool long_rope = longRopeAt(model_->config, L);
  if (long_rope == long_rope_) return;
  long_rope_ = long_rope;
  for (int64_t i = 0; i < model_->config.n_layers; ++i)
    options_[i].rope_inv_freq = layerOptions(model_->config, i, L).rope_inv_freq;
  reset();
}

void ModelRunner::embed(const ModelTokens& tokens) {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), D = c.hidden;
  const float scale = c.family->embed_scale_sqrt_d ? std::sqrt(static_cast<float>(D)) : 1.0f;
  reshape(x_, L - start_, D);  // rows [start_, L) only
  for (int64_t t = start_; t < L; ++t) {
    float* row = &x_.data[(t - start_) * D];
    m.embed.rowInto(tokens.ids[t], row);
    for (int64_t j = 0; j < D; ++j) {
      float v = row[j] * scale;
      if (!m.positions.empty()) v += m.positions.data[t * D + j];
      if (!m.token_type.empty()) v += m.token_type.data[j];
      row[j] = v;
    }
  }
  if (!m.embed_norm.empty()) {
    applyNorm(c.family->norm, m.embed_norm, c.norm_eps, x_, h_);
    std::swap(x_, h_);
  }
}

void ModelRunner::attention(int64_t i, const Tensor& input, const std::vector<std::string>& labels, Tensor& out) {
  const int64_t L = static_cast<int64_t>(labels.size());
  const Projections weights = model_->layers[i].projections();  // shared with other runners, never copied
  reshape(out, input.dim(0), weights.o.N);
  if (!decode_.empty()) {  // one position: probs [H, L] into the step's rows
    const int64_t H = options_[i].heads;
    decodeRow(decode_[i], weights, options_[i], input.data.data(), &run_.step_probs.data[i * H * L], out.data.data(),
              step_maps_ == StepMaps::Keep ? TraceRow{&run_.layers[i], &labels, &masks_} : TraceRow{});
    return;
  }
  const HeadEdits* edits = edits_.empty() ? nullptr : &edits_;
  if (!attention_kept_.empty() && attention_kept_[i]) {  // only what the heads' z feed changed
    outputRows(run_.layers[i], weights.o, weights.b_o, edits, start_, z_rows_, out.data.data());
    return;
  }
  attendRows(run_.layers[i], weights, options_[i], input.data.data(), start_, L, labels, out.data.data(), &masks_,
             edits, kept_from_.empty() ? nullptr : kept_from_[i]);
}

void ModelRunner::mlp(const LayerWeights& w, const Tensor& input, Tensor& out) {
  const ModelConfig& c = model_->config;
  linear(input, w.up, up_);
  if (c.family->mlp == Mlp::Gated) {
    linear(input, w.gate, gate_);
    gateAll(c.activation, gate_.data.data(), up_.data.data(), static_cast<int64_t>(up_.data.size()));
  } else {
    activateAll(c.activation, up_.data.data(), static_cast<int64_t>(up_.data.size()));
  }
  linear(up_, w.down, out);
}

void ModelRunner::layer(int64_t i, const std::vector<std::string>& labels) {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const LayerWeights& w = m.layers[i];
  const Norm kind = c.family->norm;
  if (c.family->residual == Residual::PostNorm) {  // BERT: x = n1(x + attn(x)); x = n2(x + mlp(x))
    attention(i, x_, labels, a_);
    addInto(a_, x_);
    applyNorm(kind, w.attn_norm, c.norm_eps, a_, x_);
    mlp(w, x_, m_);
    addInto(m_, x_);
    applyNorm(kind, w.mlp_norm, c.norm_eps, m_, x_);
    return;
  }
  attention(i, normedOrSelf(kind, w.attn_norm, c.norm_eps, x_, h_), labels, a_);
  if (!w.post_attn_norm.empty()) {
    applyNorm(kind, w.post_attn_norm, c.norm_eps, a_, h_);
    std::swap(a_, h_);
  }
  if (c.parallel_residual) {  // x += attn(n1(x)) + mlp(n2(x)), both from the same x
    applyNorm(kind, w.mlp_norm, c.norm_eps, x_, h_);
    mlp(w, h_, m_);
    addInto(x_, a_);
    addInto(x_, m_);
    return;
  }
  addInto(x_, a_);
  if (w.up.weight.empty()) return;  // attention only (attnscope-model/1's "mlp": false)
  mlp(w, normedOrSelf(kind, w.mlp_norm, c.norm_eps, x_, h_), m_);
  if (!w.post_mlp_norm.empty()) {
    applyNorm(kind, w.post_mlp_norm, c.norm_eps, m_, h_);
    std::swap(m_, h_);
  }
  addInto(x_, m_);
}

void modelOutputLogits(const Model& m, const Tensor& x, float* logits) {
  const ModelConfig& c = m.config;
  const int64_t rows = x.dim(0), V = c.vocab;
  Tensor normed = x, scratch;  // [rows, D]
  if (!m.final_norm.empty()) applyNorm(c.family->norm, m.final_norm, c.norm_eps, x, normed);
  if (!m.mlm_transform.weight.empty()) {  // BERT: LayerNorm(act(dense(x)))
    linear(normed, m.mlm_transform, scratch);
    activateAll(c.activation, scratch.data.data(), static_cast<int64_t>(scratch.data.size()));
    applyNorm(c.family->norm, m.mlm_norm, c.norm_eps, scratch, normed);
  }
  linearInto(normed.data.data(), rows, m.unembedding(), m.lm_bias, logits);
  if (c.final_softcap) {
    const double cap = *c.final_softcap;
    for (int64_t n = 0; n < rows * V; ++n) logits[n] = static_cast<float>(cap * std::tanh(logits[n] / cap));
  }
}

RowHead modelHead(const Model& m) {
  return [&m](const Tensor& x, float* logits) { modelOutputLogits(m, x, logits); };
}

void ModelRunner::unembed() {
  const Model& m = *model_;
  if (!m.hasHead()) {  // an encoder without masked-LM head: no scores
    run_.logits = RunLogits();
    run_.logits_rows = 0;
    return;
  }
  startLogitRows(run_, x_, start_, m.config.vocab);  // rows [0, start_) kept
  computeLogitRows(run_, logit_rows_, modelHead(m));
}

void ModelRunner::checkTokens(const ModelTokens& tokens) const {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  const std::string unit = tokenUnit(m);
  if (L == 0)
    throw InputError(m.chars ? "the text is empty: give at least one " + unit.substr(0, unit.size() - 1)
                             : "the text gives no tokens: give at least one");
  if (L > c.max_positions)
    throw InputError("the text has " + std::to_string(L) + " " + unit + " but " + m.name() + "'s context is " +
                     std::to_string(c.max_positions) + " (" + c.context_key + " in " + c.config_path + ")");
  for (int64_t id : tokens.ids) checkTokenId(m, id);
}

void ModelRunner::keepResiduals(bool keep) {
  if (keep != keep_residuals_) inputs_kept_ = false;  // the other store holds nothing of the last run
  keep_residuals_ = keep;
}

void ModelRunner::setInterventions(Interventions interventions) {
  checkInterventions(interventions, model_->config, -1);
  interventions_ = std::move(interventions);
}

Tensor& ModelRunner::inputStore() {
  if (keep_residuals_) return run_.residuals;
  // Kept without interventions too (N L D floats, a few percent of the maps' N H L L): the first
  // ablation toggled on resumes at its layer instead of running every layer again.
  return layer_inputs_;
}

std::vector<int64_t> ModelRunner::layerStarts(const ModelTokens& tokens, int64_t prefix,
                                              std::vector<uint8_t>& attention_kept) const {
  const ModelConfig& c = model_->config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), N = c.n_layers;
  const std::vector<int64_t> changed = changedRows(applied_, interventions_, N, c.heads, L);
  const std::vector<int64_t> attention = attentionChangedRows(applied_, interventions_, N, c.heads, L);
  const bool resized = static_cast<int64_t>(run_.tokens.ids.size()) != L;
  // The last run's traces hold this text's attention (lent traces are other storage).
  const bool same_text = !resized && prefix == L && run_.tokens.label == tokens.label && shared_.empty();
  std::vector<int64_t> starts(static_cast<size_t>(N));
  attention_kept.assign(static_cast<size_t>(N), 0);
  int64_t s = prefix;
  for (int64_t i = 0; i < N; ++i) {
    attention_kept[i] = same_text && inputs_kept_ && s == L && attention[i] == L;  // s: where layer i's input changed
    s = std::min(s, changed[i]);
    // Every row moves: a mean ablation's mean, or an encoder's rows (each sees every key).
    if ((hasMeanAblation(interventions_, i) || !c.family->causal) && (s < L || resized)) s = 0;
    starts[i] = s;
  }
  // Inputs to resume a layer from: the last run's, in the store this run reads.
  if (!inputs_kept_) std::fill(starts.begin(), starts.end(), starts.back());
  return starts;
}

void ModelRunner::resume(const Tensor& kept, int64_t layer, int64_t start) {
  const int64_t L = kept.dim(1), D = kept.dim(2), rows = start_ - start;
  Tensor x({L - start, D});
  std::copy_n(&kept.data[(layer * L + start) * D], rows * D, x.data.begin());
  std::copy(x_.data.begin(), x_.data.begin() + (L - start_) * D, x.data.begin() + rows * D);
  x_ = std::move(x);
  start_ = start;
}

void ModelRunner::patchResiduals(int64_t layer, int64_t L) {
  const int64_t D = model_->config.hidden;
  for (const ResidualPatch& p : interventions_.residual_patches)
    if (p.layer == layer && p.position >= start_ && p.position < L)
      std::copy_n(p.x.data(), D, &x_.data[(p.position - start_) * D]);
}

void ModelRunner::forward(const ModelTokens& tokens, const std::vector<int64_t>& starts) {
  const ModelConfig& c = model_->config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), H = c.heads;
  // An unknown character keeps its label, marked; a tokenizer's unknown token is labelled by its name ("[UNK]").
  std::vector<std::string> labels;
  for (size_t t = 0; t < tokens.label.size(); ++t)
    labels.push_back(tokens.unknown[t] && model_->chars ? tokens.label[t] + " (unk)" : tokens.label[t]);
  start_ = starts.front();
  embed(tokens);
  (keep_residuals_ ? layer_inputs_ : run_.residuals) = Tensor();  // the store not in use holds nothing
  Tensor& store = inputStore();
  resizeResiduals(c.n_layers + 1, L, c.hidden, store);
  // The store holds every row of this run at the end when it held the last run's, or when
  // this run writes every row (a store just switched to may hold an older run's rows).
  const bool complete = inputs_kept_ || starts.back() == 0;
  inputs_kept_ = false;  // until every layer's input is in
  run_.layers.resize(c.n_layers);
  takeBackTraces(false);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    if (starts[i] < start_) resume(store, i, starts[i]);  // layerStarts lowers a start only with inputs kept
    storeResidualRows(x_, i, start_, store);
    patchResiduals(i, L);
    edits_ = headEdits(interventions_, i, H, L);
    const AttentionTrace* lent = kept_from_.empty() ? nullptr : kept_from_[i];
    if (start_ == L && (lent ? lent->L : run_.layers[i].L) == L) {  // nothing of this layer changed
      if (lent) run_.layers[i] = *lent;  // its rows are in the lent trace: copied into the storage taken
      continue;
    }
    layer(i, labels);
  }
  storeResidualRows(x_, c.n_layers, start_, store);
  inputs_kept_ = complete;
  kept_from_.clear();  // the rows are in run_.layers now (spare_ still holds what they came from)
  unembed();
}

std::vector<std::shared_ptr<const AttentionTrace>> ModelRunner::shareTraces() {
  if (shared_.empty() && run_.mapsKept())
    for (AttentionTrace& trace : run_.layers) {
      shared_.push_back(std::make_shared<AttentionTrace>(std::move(trace)));
      trace = AttentionTrace();
      trace.L = shared_.back()->L;  // the sizes canStep and reusablePrefix read
    }
  return {shared_.begin(), shared_.end()};
}

void ModelRunner::takeBackTraces(bool copy) {
  if (shared_.empty()) return;
  spare_.resize(shared_.size());
  kept_from_.assign(shared_.size(), nullptr);
  for (size_t i = 0; i < shared_.size(); ++i) {
    std::shared_ptr<AttentionTrace>& lent = shared_[i];
    if (lent.use_count() == 1) {  // nobody holds it: the run keeps its rows in place
      run_.layers[i] = std::move(*lent);
      continue;
    }
    if (copy) {
      run_.layers[i] = *lent;
    } else {  // written whole into released storage (or new), its kept rows read from the lent trace
      if (spare_[i] && spare_[i].use_count() == 1) std::swap(run_.layers[i], *spare_[i]);
      kept_from_[i] = lent.get();
    }
    spare_[i] = std::move(lent);  // its storage, once released, for a later run
  }
  shared_.clear();
}

const ModelRun& ModelRunner::run(ModelTokens tokens) {
  checkTokens(tokens);
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  chooseRopeFactors(L);
  // Causal: the positions before the first changed token keep their rows (cached_rows.h),
  // and their residuals when the last run kept them too.
  const ModelConfig& c = model_->config;
  const bool keep_maps = modelMapBytes(c.n_layers, c.heads, L) <= maps_budget_;
  for (AttentionOptions& o : options_) o.keep_maps = keep_maps, o.keep_scores = keep_scores_;
  // An encoder's rows all see every token: it keeps its layers only for the same tokens.
  const bool same = run_.tokens.ids == tokens.ids && run_.tokens.label == tokens.label;
  const bool scores_alike = last_kept_scores_ == keep_scores_;
  last_kept_scores_ = keep_scores_;
  const int64_t prefix =
      (c.family->causal || same) && scores_alike ? reusablePrefix(run_, tokens, keep_residuals_, keep_maps) : 0;
  const std::vector<int64_t> starts = layerStarts(tokens, prefix, attention_kept_);
  // Nothing changed (the labels too: two unknown characters share an id, not a label).
  if (starts.back() == L && same) {
    attention_kept_.clear();
    run_.first_computed = L;
    run_.tokens = std::move(tokens);
    computeLogitRows(run_, logit_rows_, modelHead(*model_));  // rows now wanted that were not
    return run_;
  }
  run_.first_computed = L;  // until the run succeeds: a failed run computed nothing usable
  decode_.clear();
  run_.decoded_from = -1;
  run_.step_probs = Tensor();
  try {
    forward(tokens, starts);
  } catch (...) {
    reset();  // a half-updated cache must not be kept
    throw;
  }
  attention_kept_.clear();
  applied_ = interventions_;
  run_.first_computed = starts.back();  // the lowest: a later layer may start before the first
  run_.tokens = std::move(tokens);
  return run_;
}

const ModelRun& ModelRunner::step(ModelTokens tokens, StepMaps maps) {
  if (!model_->config.family->causal || !interventions_.empty() || !applied_.empty() ||
      !canStep(run_, tokens, maps, keep_residuals_) ||
      longRopeAt(model_->config, static_cast<int64_t>(tokens.ids.size())) != long_rope_)
    return run(std::move(tokens));
  checkTokens(tokens);
  takeBackTraces(true);  // the decode caches start from the traces (a runner that steps seldom shares)
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), N = model_->config.n_layers;
  if (decode_.empty()) {
    decode_.resize(N);
    for (int64_t i = 0; i < N; ++i) startDecode(run_.layers[i], options_[i].mask, decode_[i]);
    run_.decoded_from = L - 1;
  }
  start_ = L - 1;
  run_.first_computed = L;
  run_.step_probs = Tensor({N, run_.layers.front().H, L});
  step_maps_ = maps;
  try {
    forward(tokens, std::vector<int64_t>(static_cast<size_t>(N), L - 1));
  } catch (...) {
    reset();
    throw;
  }
  run_.first_computed = start_;
  run_.tokens = std::move(tokens);
  return run_;
}

ModelRunner ModelRunner::sibling() const {
  ModelRunner r(model_);
  r.options_ = options_;
  r.keep_residuals_ = keep_residuals_;
  r.logit_rows_ = logit_rows_;
  r.maps_budget_ = maps_budget_;
  r.keep_scores_ = keep_scores_;
  r.long_rope_ = long_rope_;
  return r;
}

void ModelRunner::reset() {
  run_ = ModelRun();
  decode_.clear();
  shared_.clear();
  spare_.clear();
  kept_from_.clear();
  attention_kept_.clear();
  applied_ = Interventions();
  inputs_kept_ = false;
}

}  // namespace attnscope
