// The forward pass of an attnscope-model/1 transformer (GPT-2 style, pre-LayerNorm):
//   x = tok_emb[ids] + pos_emb[:L]
//   per block: x += attn(ln1(x))   (causal multi-head attention through runAttention, so
//              each layer keeps its full AttentionTrace)
//              x += w_out gelu(w_in ln2(x) + b_in) + b_out   (unless mlp = false)
//   logits = ln_f(x) lm_head^T
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "model/model.h"

namespace attnscope {

struct ModelRun {
  ModelTokens tokens;                  // [L]
  std::vector<AttentionTrace> layers;  // [N], each B = 1: probs [1, H, L, L]
  Tensor logits;                       // [L, V]: logits[t] scores the token after position t
  Tensor residuals;                    // [N + 1, L, D] when the runner keeps them (keepResiduals):
                                       // [0] the embeddings, [k] the residual stream after k layers
};

// residuals [slots, L, D]: slot `index` = x [L, D]; slot 0 sizes the tensor.
void storeResidual(const Tensor& x, int64_t index, int64_t slots, Tensor& residuals);

// The output head of an attnscope-model/1 model: logits [L, V] = ln_f(x [L, D]) lm_head^T.
void modelOutputLogits(const Model& model, const Tensor& x, Tensor& logits);

struct Prediction {
  int64_t id = 0;
  std::string label;  // vocab entry, escaped for one line ("\\n")
  double prob = 0.0;
};

// [V] next-token probabilities after `position`: softmax of logits[position], in double.
std::vector<double> nextTokenProbs(const Tensor& logits, int64_t position);

// The ids of the k largest entries of p, largest first (ties: the smaller id first).
std::vector<int64_t> topIds(const std::vector<double>& p, int64_t k);

// The k most likely next tokens after `position` (softmax of logits[position]), best first.
std::vector<Prediction> topPredictions(const Model& model, const Tensor& logits, int64_t position, int64_t k);

// Runs one model again and again (one keystroke after another): the per-layer attention
// inputs, with their weights, and the activation buffers are kept between runs.
class ModelRunner {
 public:
  explicit ModelRunner(std::shared_ptr<const Model> model);

  // Throws InputError for an empty text or one longer than the context (max_len tokens).
  const ModelRun& run(const std::string& text);
  const ModelRun& runTokens(ModelTokens tokens);

  const Model& model() const { return *model_; }
  const ModelRun& last() const { return run_; }
  // Keep the residual stream after every layer in ModelRun::residuals (the logit lens).
  void keepResiduals(bool keep) { keep_residuals_ = keep; }

 private:
  std::shared_ptr<const Model> model_;
  AttentionOptions options_;
  std::vector<AttentionInputs> attn_;  // [N]: weights set once, query/key/value per run
  Tensor x_;    // [L, D] residual stream
  Tensor h_;    // [L, D] LayerNorm output
  Tensor mid_;  // [L, M] MLP hidden
  ModelRun run_;
  bool keep_residuals_ = false;
};

// Text longer than the context: the error message used by run() (for callers that check first).
std::string contextOverflowMessage(const Model& model, int64_t tokens);

}  // namespace attnscope
