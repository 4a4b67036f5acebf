#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attention/cached_rows.h"
#include "attention/kernel.h"

namespace attnscope {
namespace {

// out [L, D] = LayerNorm(x [L, D]) * weight + bias; mean and biased variance in double.
void layerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, int64_t L, int64_t D,
               Tensor& out) {
  for (int64_t t = 0; t < L; ++t) {
    const float* row = &x.data[t * D];
    double mean = 0.0;
    for (int64_t c = 0; c < D; ++c) mean += row[c];
    mean /= static_cast<double>(D);
    double var = 0.0;
    for (int64_t c = 0; c < D; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(D);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
    float* o = &out.data[t * D];
    for (int64_t c = 0; c < D; ++c)
      o[c] = static_cast<float>((row[c] - mean) * inv) * weight.data[c] + bias.data[c];
  }
}

float gelu(float x, Activation kind) {
  if (kind == Activation::Gelu) return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(M_SQRT1_2)));
  const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

// Tensor t resized to [rows, cols] (its buffer is kept when large enough).
void reshape(Tensor& t, int64_t rows, int64_t cols) {
  t.shape = {rows, cols};
  t.data.resize(rows * cols);
}

}  // namespace

std::string contextOverflowMessage(const Model& model, int64_t tokens) {
  const bool chars = model.config.tokenizer == Tokenizer::Chars;
  return "text has " + std::to_string(tokens) + (chars ? " characters" : " bytes") + " but " + model.config.name +
         "'s context is " + std::to_string(model.config.max_len) + " (max_len in " + model.folder + "/config.json)";
}

std::vector<double> nextTokenProbs(const float* row, int64_t V) {
  const double top = *std::max_element(row, row + V);
  std::vector<double> p(V);
  double sum = 0.0;
  for (int64_t v = 0; v < V; ++v) sum += p[v] = std::exp(row[v] - top);
  for (double& x : p) x /= sum;
  return p;
}

std::vector<int64_t> topIds(const std::vector<double>& p, int64_t k) {
  const int64_t V = static_cast<int64_t>(p.size());
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, V);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  order.resize(k);
  return order;
}

std::vector<Prediction> topPredictions(const Model& model, const float* logits, int64_t V, int64_t k) {
  const std::vector<double> p = nextTokenProbs(logits, V);
  std::vector<Prediction> out;
  for (int64_t id : topIds(p, k)) out.push_back({id, tokenLabel(model, id), p[id]});
  return out;
}

uint64_t modelMapBytes(int64_t layers, int64_t H, int64_t L) {
  const double bytes = 8.0 * static_cast<double>(layers) * static_cast<double>(H) * static_cast<double>(L) * L;
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

int64_t reusablePrefix(const ModelRun& last, const ModelTokens& tokens, bool keep_residuals, bool keep_maps) {
  if (last.layers.empty() || (keep_residuals && last.residuals.empty()) || last.mapsKept() != keep_maps) return 0;
  const std::vector<int64_t>& before = last.tokens.ids;
  const size_t n = std::min(before.size(), tokens.ids.size());
  const int64_t same = std::mismatch(before.begin(), before.begin() + n, tokens.ids.begin()).first - before.begin();
  return last.decoded_from >= 0 ? std::min(same, last.decoded_from) : same;
}

bool canStep(const ModelRun& last, const ModelTokens& tokens, StepMaps maps, bool keep_residuals) {
  const std::vector<int64_t>& before = last.tokens.ids;
  const bool extends = !last.layers.empty() && before.size() + 1 == tokens.ids.size() &&
                       std::equal(before.begin(), before.end(), tokens.ids.begin());
  // Keep appends to traces that hold every position so far (not after RowsOnly steps); a
  // run in tiles has no maps to append to; the lens needs the residuals kept so far.
  return extends && last.mapsKept() && (maps == StepMaps::RowsOnly || last.layers.front().L == static_cast<int64_t>(before.size())) &&
         (!keep_residuals || !last.residuals.empty());
}

void resizeResiduals(int64_t slots, int64_t L, int64_t D, Tensor& residuals) {
  const int64_t old_L = residuals.shape.size() == 3 && residuals.dim(0) == slots && residuals.dim(2) == D ? residuals.dim(1) : 0;
  const int64_t kept = std::min(old_L, L);
  Tensor resized({slots, L, D});
  for (int64_t s = 0; s < slots; ++s)
    std::copy_n(residuals.data.begin() + s * old_L * D, kept * D, resized.data.begin() + s * L * D);
  residuals = std::move(resized);
}

void storeResidualRows(const Tensor& x, int64_t index, int64_t start, Tensor& residuals) {
  const int64_t L = residuals.dim(1), D = residuals.dim(2);
  std::copy(x.data.begin(), x.data.end(), residuals.data.begin() + (index * L + start) * D);
}

bool LogitRows::wants(int64_t position, int64_t L) const {
  if (all) return true;
  for (int64_t p : positions) {
    if (p < 0) p += L;
    if (p >= 0 && p < L && p / kRowBlock == position / kRowBlock) return true;
  }
  return false;
}

void RunLogits::resize(int64_t L, int64_t V, int64_t keep) {
  if (V != V_) keep = 0;
  keep = std::min(keep, L);
  L_ = L, V_ = V;
  computed_.resize(static_cast<size_t>(L));
  std::fill(computed_.begin() + keep, computed_.end(), 0);
  blocks_.resize(static_cast<size_t>(rowBlocks(L)));
  for (int64_t b = 0; b < static_cast<int64_t>(blocks_.size()); ++b) {
    const int64_t first = b * kRowBlock, end = std::min(L, first + kRowBlock);
    if (std::find(computed_.begin() + first, computed_.begin() + end, 1) == computed_.begin() + end)
      FloatBuffer().swap(blocks_[b]);
  }
}

const float* RunLogits::row(int64_t t) const {
  return computed_[t] ? &blocks_[t / kRowBlock][(t % kRowBlock) * V_] : nullptr;
}

float* RunLogits::rowsToWrite(int64_t first, int64_t end) {
  FloatBuffer& block = blocks_[first / kRowBlock];
  // Unset until written: only rows marked computed are read (row()); 12.3 MiB a block at V 50257.
  if (block.empty()) resizePrefaulted(block, static_cast<size_t>(kRowBlock * V_), std::nullopt);
  std::fill(computed_.begin() + first, computed_.begin() + end, 1);
  return &block[(first % kRowBlock) * V_];
}

Tensor RunLogits::dense() const {
  Tensor out({L_, V_}, std::nanf(""));
  for (int64_t t = 0; t < L_; ++t)
    if (const float* r = row(t)) std::copy_n(r, V_, &out.data[t * V_]);
  return out;
}

void startLogitRows(ModelRun& run, const Tensor& x, int64_t start, int64_t V) {
  const int64_t L = start + x.dim(0), D = x.dim(1);
  run.final_residual.shape = {L, D};
  run.final_residual.data.resize(L * D);  // rows [0, start) kept
  std::copy(x.data.begin(), x.data.end(), run.final_residual.data.begin() + start * D);
  run.logits.resize(L, V, start);
}

std::pair<int64_t, int64_t> logitBlock(int64_t position, int64_t L) {
  const int64_t first = position / kRowBlock * kRowBlock;
  return {first, std::min(L, first + kRowBlock)};
}

void blockLogits(const Tensor& final_residual, std::pair<int64_t, int64_t> block, const RowHead& head, float* logits) {
  const auto [first, end] = block;
  const int64_t D = final_residual.dim(1);
  Tensor x({end - first, D});  // the block's final residual rows
  std::copy(final_residual.data.begin() + first * D, final_residual.data.begin() + end * D, x.data.begin());
  head(x, logits);
}

int64_t computeLogitRows(ModelRun& run, const LogitRows& wanted, const RowHead& head) {
  run.logits_rows = 0;
  if (run.logits.empty()) return 0;
  const int64_t L = run.logits.positions();
  for (int64_t start = 0; start < L; start += kRowBlock) {
    const int64_t end = logitBlock(start, L).second;
    // The block's rows not computed: all of them, or those after the rows a run kept.
    int64_t first = start;
    while (first < end && run.logits.computed(first)) ++first;
    if (first == end || !wanted.wants(start, L)) continue;
    blockLogits(run.final_residual, {first, end}, head, run.logits.rowsToWrite(first, end));
    run.logits_rows += end - first;
  }
  return run.logits_rows;
}

void modelOutputLogits(const Model& model, const Tensor& x, float* logits) {
  const ModelConfig& c = model.config;
  const int64_t rows = x.dim(0), D = c.d_model;
  Tensor normed({rows, D});
  layerNorm(x, model.ln_f_weight, model.ln_f_bias, c.ln_eps, rows, D, normed);
  linearInto(normed.data.data(), rows, model.lm_head, Tensor(), logits);
}

RowHead modelHead(const Model& m) {
  return [&m](const Tensor& x, float* logits) { modelOutputLogits(m, x, logits); };
}

AttentionOptions modelAttentionOptions(const ModelConfig& c) {
  AttentionOptions o;
  o.heads = c.n_heads;
  o.mask.causal = true;
  o.scale_mode = ScaleMode::InvSqrtD;
  o.fill = MaskFill::NegInf;
  return o;
}

ModelRunner::ModelRunner(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  const ModelConfig& c = model_->config;
  options_ = modelAttentionOptions(c);
}

void ModelRunner::setCacheWindow(const CacheWindow& cache) {
  MaskSpec causal;
  causal.causal = true;
  const MaskSpec mask = withCacheWindow(causal, cache);
  if (mask == options_.mask) return;
  options_.mask = mask;
  reset();  // the kept rows were computed under the other mask
}

const ModelRun& ModelRunner::run(const std::string& text) { return runTokens(tokenizeForModel(*model_, text)); }

const ModelRun& ModelRunner::runTokens(ModelTokens tokens) {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  if (L == 0) throw InputError("the text is empty: give at least one " + std::string(c.tokenizer == Tokenizer::Chars ? "character" : "byte"));
  if (L > c.max_len) throw InputError(contextOverflowMessage(m, L));
  // The positions before the first changed token keep their rows (attention/cached_rows.h).
  options_.keep_maps = modelMapBytes(c.n_layers, c.n_heads, L) <= maps_budget_;
  const int64_t prefix = reusablePrefix(run_, tokens, keep_residuals_, options_.keep_maps);
  if (prefix == L && run_.tokens.ids.size() == tokens.ids.size() && run_.tokens.label == tokens.label) {  // nothing changed
    run_.first_computed = L;
    run_.tokens = std::move(tokens);
    computeLogitRows(run_, logit_rows_, modelHead(m));  // rows now wanted that were not
    return run_;
  }
  const int64_t start = prefix;
  run_.first_computed = L;
  decode_.clear();
  run_.decoded_from = -1;
  run_.step_probs = Tensor();
  try {
    forward(tokens, start);
  } catch (...) {
    reset();  // a half-updated cache must not be kept
    throw;
  }
  run_.first_computed = start;
  run_.tokens = std::move(tokens);
  return run_;
}

const ModelRun& ModelRunner::step(ModelTokens tokens, StepMaps maps) {
  if (!canStep(run_, tokens, maps, keep_residuals_)) return runTokens(std::move(tokens));
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), N = model_->config.n_layers;
  if (L > model_->config.max_len) throw InputError(contextOverflowMessage(*model_, L));
  if (decode_.empty()) {
    decode_.resize(N);
    for (int64_t i = 0; i < N; ++i) startDecode(run_.layers[i], options_.mask, decode_[i]);
    run_.decoded_from = L - 1;
  }
  run_.first_computed = L;
  run_.step_probs = Tensor({N, options_.heads, L});
  step_maps_ = maps;
  try {
    forward(tokens, L - 1);
  } catch (...) {
    reset();
    throw;
  }
  run_.first_computed = L - 1;
  run_.tokens = std::move(tokens);
  return run_;
}

void ModelRunner::reset() {
  run_ = ModelRun();
  decode_.clear();
}

void ModelRunner::forward(const ModelTokens& tokens, int64_t start) {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size()), n = L - start;
  const int64_t D = c.d_model, V = c.vocab_size, M = c.d_mlp;
  // x [n, D] = tok_emb[ids] + pos_emb, rows [start, L)
  reshape(x_, n, D);
  reshape(h_, n, D);
  reshape(a_, n, D);
  for (int64_t t = start; t < L; ++t) {
    const float* e = &m.tok_emb.data[tokens.ids[t] * D];
    const float* p = &m.pos_emb.data[t * D];
    for (int64_t j = 0; j < D; ++j) x_.data[(t - start) * D + j] = e[j] + p[j];
  }
  if (keep_residuals_) {
    resizeResiduals(c.n_layers + 1, L, D, run_.residuals);
    storeResidualRows(x_, 0, start, run_.residuals);
  } else {
    run_.residuals = Tensor();
  }
  std::vector<std::string> labels;
  for (size_t t = 0; t < tokens.label.size(); ++t)
    labels.push_back(tokens.unknown[t] ? tokens.label[t] + " (unk)" : tokens.label[t]);

  run_.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const BlockWeights& b = m.blocks[i];
    layerNorm(x_, b.ln1_weight, b.ln1_bias, c.ln_eps, n, D, h_);
    // self-attention: query = key = value = ln1(x); output o-projection included
    if (decode_.empty())
      attendRows(run_.layers[i], projectionsOf(b.attn), options_, h_.data.data(), start, L, labels, a_.data.data(), &masks_);
    else  // one position: probs [H, L] into the step's rows
      decodeRow(decode_[i], projectionsOf(b.attn), options_, h_.data.data(), &run_.step_probs.data[i * options_.heads * L], a_.data.data(),
                step_maps_ == StepMaps::Keep ? TraceRow{&run_.layers[i], &labels, &masks_} : TraceRow{});
    for (int64_t k = 0; k < n * D; ++k) x_.data[k] += a_.data[k];

    if (c.mlp) {
      layerNorm(x_, b.ln2_weight, b.ln2_bias, c.ln_eps, n, D, h_);
      reshape(mid_, n, M);
      linearInto(h_.data.data(), L - start, b.w_in, b.b_in, mid_.data.data());
      for (float& v : mid_.data) v = gelu(v, c.activation);
      linearInto(mid_.data.data(), L - start, b.w_out, b.b_out, a_.data.data());
      for (int64_t k = 0; k < n * D; ++k) x_.data[k] += a_.data[k];
    }
    if (keep_residuals_) storeResidualRows(x_, i + 1, start, run_.residuals);
  }

  // logits [L, V] = ln_f(x) lm_head^T of the wanted rows; rows [0, start) kept
  startLogitRows(run_, x_, start, V);
  computeLogitRows(run_, logit_rows_, modelHead(m));
}

}  // namespace attnscope
