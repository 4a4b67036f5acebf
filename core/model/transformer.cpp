#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>

namespace attnscope {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstRowVector = Eigen::Map<const Eigen::RowVectorXf>;

ConstMatrixMap matrix(const Tensor& t) { return ConstMatrixMap(t.data.data(), t.dim(0), t.dim(1)); }

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

std::vector<double> nextTokenProbs(const Tensor& logits, int64_t position) {
  const int64_t V = logits.dim(1);
  const float* row = &logits.data.at(position * V);
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

std::vector<Prediction> topPredictions(const Model& model, const Tensor& logits, int64_t position, int64_t k) {
  const std::vector<double> p = nextTokenProbs(logits, position);
  std::vector<Prediction> out;
  for (int64_t id : topIds(p, k)) out.push_back({id, tokenLabel(model, id), p[id]});
  return out;
}

void storeResidual(const Tensor& x, int64_t index, int64_t slots, Tensor& residuals) {
  const int64_t L = x.dim(0), D = x.dim(1);
  if (index == 0) {
    residuals.shape = {slots, L, D};
    residuals.data.resize(slots * L * D);
  }
  std::copy(x.data.begin(), x.data.end(), residuals.data.begin() + index * L * D);
}

void modelOutputLogits(const Model& model, const Tensor& x, Tensor& logits) {
  const ModelConfig& c = model.config;
  const int64_t L = x.dim(0), D = c.d_model, V = c.vocab_size;
  Tensor normed({L, D});
  layerNorm(x, model.ln_f_weight, model.ln_f_bias, c.ln_eps, L, D, normed);
  reshape(logits, L, V);
  MatrixMap(logits.data.data(), L, V).noalias() = ConstMatrixMap(normed.data.data(), L, D) * matrix(model.lm_head).transpose();
}

ModelRunner::ModelRunner(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  const ModelConfig& c = model_->config;
  options_.heads = c.n_heads;
  options_.mask.causal = true;
  options_.scale_mode = ScaleMode::InvSqrtD;
  options_.fill = MaskFill::NegInf;
  for (const BlockWeights& b : model_->blocks) {
    AttentionInputs in;
    in.w_q = b.w_q;
    in.w_k = b.w_k;
    in.w_v = b.w_v;
    in.w_o = b.w_o;
    in.b_q = b.b_q;
    in.b_k = b.b_k;
    in.b_v = b.b_v;
    in.b_o = b.b_o;
    attn_.push_back(std::move(in));
  }
}

const ModelRun& ModelRunner::run(const std::string& text) { return runTokens(tokenizeForModel(*model_, text)); }

const ModelRun& ModelRunner::runTokens(ModelTokens tokens) {
  const Model& m = *model_;
  const ModelConfig& c = m.config;
  const int64_t L = static_cast<int64_t>(tokens.ids.size());
  const int64_t D = c.d_model, M = c.d_mlp;
  if (L == 0) throw InputError("the text is empty: give at least one " + std::string(c.tokenizer == Tokenizer::Chars ? "character" : "byte"));
  if (L > c.max_len) throw InputError(contextOverflowMessage(m, L));

  // x [L, D] = tok_emb[ids] + pos_emb[:L]
  reshape(x_, L, D);
  reshape(h_, L, D);
  for (int64_t t = 0; t < L; ++t) {
    const float* e = &m.tok_emb.data[tokens.ids[t] * D];
    const float* p = &m.pos_emb.data[t * D];
    for (int64_t j = 0; j < D; ++j) x_.data[t * D + j] = e[j] + p[j];
  }
  run_.residuals = Tensor();
  if (keep_residuals_) storeResidual(x_, 0, c.n_layers + 1, run_.residuals);
  std::vector<std::string> labels;
  for (size_t t = 0; t < tokens.label.size(); ++t)
    labels.push_back(tokens.unknown[t] ? tokens.label[t] + " (unk)" : tokens.label[t]);

  run_.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const BlockWeights& b = m.blocks[i];
    AttentionInputs& in = attn_[i];
    layerNorm(x_, b.ln1_weight, b.ln1_bias, c.ln_eps, L, D, h_);
    in.query.shape = {1, L, D};
    in.query.data = h_.data;  // self-attention: query = key = value = ln1(x)
    in.key = in.query;
    in.value = in.query;
    in.query_tokens = labels;
    in.key_tokens = labels;
    run_.layers[i] = runAttention(in, options_);
    const Tensor& attn_out = run_.layers[i].output;  // [1, L, D], o-projection included
    for (int64_t n = 0; n < L * D; ++n) x_.data[n] += attn_out.data[n];

    if (c.mlp) {
      layerNorm(x_, b.ln2_weight, b.ln2_bias, c.ln_eps, L, D, h_);
      reshape(mid_, L, M);
      MatrixMap mid(mid_.data.data(), L, M);
      mid.noalias() = ConstMatrixMap(h_.data.data(), L, D) * matrix(b.w_in).transpose();
      mid.rowwise() += ConstRowVector(b.b_in.data.data(), M);
      for (float& v : mid_.data) v = gelu(v, c.activation);
      MatrixMap x(x_.data.data(), L, D);
      x.noalias() += mid * matrix(b.w_out).transpose();
      x.rowwise() += ConstRowVector(b.b_out.data.data(), D);
    }
    if (keep_residuals_) storeResidual(x_, i + 1, c.n_layers + 1, run_.residuals);
  }

  modelOutputLogits(m, x_, run_.logits);
  run_.tokens = std::move(tokens);
  return run_;
}

}  // namespace attnscope
