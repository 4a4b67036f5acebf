// Hugging Face model folders run natively: config.json (hf_config.h), the weights of
// model.safetensors or its shards (tensor/safetensors.h) and the tokenizer (tokenizer/).
// The forward pass follows each family's traits row; every layer's attention goes through
// runAttention (GQA, RoPE with scaled / partial inverse frequencies, soft-cap, sliding
// window as a causal-window mask), so each layer keeps its full AttentionTrace.
//
// Memory rule: the matrices are read once, at load: BF16 ones kept as stored (tensor/weights.h:
// the row GEMM widens them in registers), F32 and F16 ones, norms, biases and positions as
// float32 (the matrices in the row GEMM's panels, counted with their padding), when that
// size fits the memory this process may still allocate (MemAvailable, or
// less under `ulimit -v`, the budget checkMemory uses); otherwise the folder is refused with
// that estimate before anything past the safetensors headers is read (before a truncated
// file's own error).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/cached_rows.h"
#include "attention/kv_cache.h"
#include "model/hf_config.h"
#include "model/transformer.h"
#include "tensor/interrupt.h"
#include "tokenizer/tokenizer.h"

namespace attnscope {

struct HfNormWeights {
  Tensor weight, bias;  // [D]; bias empty for RMSNorm
  bool empty() const { return weight.empty(); }
};

struct HfLinear {
  Weights weight;  // nn.Linear: [out, in]
  Tensor bias;     // [out] or empty
};

struct HfLayer {
  HfNormWeights attn_norm, post_attn_norm, mlp_norm, post_mlp_norm;
  HfNormWeights q_norm, k_norm;  // [d] per-head RMSNorm of q and k (Role::QNorm, KNorm), or empty
  HfLinear q, k, v, o;  // q [H*d, D], k/v [G*d, D], o [D, H*d]
  HfLinear gate, up, down;  // gate only for gated MLPs
  Projections projections() const;  // q .. o for attendRows (they must outlive it)
};

struct HfModel {
  std::string folder;
  HfConfig config;
  Weights embed;          // [V, D]
  Tensor positions;       // [P, D] learned positions, or empty
  Tensor token_type;      // [D]: token type 0 (BERT), or empty
  HfNormWeights embed_norm, final_norm;
  std::vector<HfLayer> layers;  // [N]
  Weights lm_head;        // [V, D] when untied (tied: empty, `embed` is the head, not copied)
  bool head_tied = false;  // the embedding is the unembedding (tie_word_embeddings)
  // The unembedding [V, D]: lm_head, or the embedding when tied; empty for an encoder without MLM head.
  const Weights& unembedding() const { return head_tied ? embed : lm_head; }
  bool hasHead() const { return !unembedding().empty(); }
  Tensor lm_bias;         // [V] or empty
  HfLinear mlm_transform;  // BERT's cls.predictions.transform (dense + LayerNorm)
  HfNormWeights mlm_norm;
  std::string tensor_prefix;  // "model.", "transformer.", ... or "" (saved from a base class)
  std::optional<HfTokenizer> tokenizer;  // none when the folder has no tokenizer files
  std::string name() const;  // the folder's name
  int64_t context() const { return config.max_positions; }
};

// Reads config.json, maps and validates every tensor, converts the weights (memory rule
// above) and loads the tokenizer when the folder has one. InputError naming the file (and
// the tensor or field) on any problem. progress (optional) follows the conversion, as the
// fraction of the float32 bytes converted; returning false stops the load (Cancelled).
HfModel loadHfModel(const std::string& folder, bool with_tokenizer = true, const Progress& progress = {});

// The folder's tokens of a text (add_special_tokens = true) as ModelTokens: labels are the
// tokenizer's readable labels (escaped to one line), unknown marks the unk token.
ModelTokens tokenizeHf(const HfModel& model, const std::string& text);
// Token ids given directly; labels from the tokenizer when there is one, else the ids.
ModelTokens hfTokensFromIds(const HfModel& model, const std::vector<int64_t>& ids);
std::string hfTokenLabel(const HfModel& model, int64_t id);

// The output head on residual rows x [rows, D] (any positions: a row's logits do not depend on
// the others): logits [rows, V] (final norm, lm_head or BERT's MLM head, final soft-capping).
// The model must have a head (lm_head not empty).
void hfOutputLogits(const HfModel& model, const Tensor& x, float* logits);
RowHead hfHead(const HfModel& model);  // hfOutputLogits as a RowHead (the model must outlive it)

// Layer `layer`'s attention options from the config (GQA, scale, soft-cap, causal window, RoPE).
AttentionOptions hfLayerOptions(const HfConfig& config, int64_t layer);

// Runs one model on token after token of text; buffers are kept between runs. A causal
// model keeps each layer's K, V and map rows (attention/cached_rows.h): a run computes from
// the first token that differs from the last run's and equals a from-scratch run bit for
// bit; ModelRun::first_computed says where it started.
class HfRunner {
 public:
  explicit HfRunner(std::shared_ptr<const HfModel> model);
  // InputError for no tokens, more tokens than the context, or an id outside the vocabulary.
  const ModelRun& run(ModelTokens tokens);
  // Generation: `tokens` = the last run's plus one (canStep; run() otherwise) computes
  // that one position through each layer's decode cache (one row, ModelRun::decoded_from).
  const ModelRun& step(ModelTokens tokens, StepMaps maps = StepMaps::RowsOnly);
  void reset();  // forget the cache: the next run computes every row
  const HfModel& model() const { return *model_; }
  // Keep the residual stream after every layer in ModelRun::residuals (the logit lens).
  void keepResiduals(bool keep) { keep_residuals_ = keep; }
  // The positions whose logits each run computes (default: all).
  void logitRows(LogitRows rows) { logit_rows_ = std::move(rows); }
  // Sinks + causal window on every layer (attention/kv_cache.h); a change forgets the cache.
  void setCacheWindow(const CacheWindow& cache);
  // A run whose maps (modelMapBytes) exceed `bytes` keeps Q, K and the row normalisers
  // instead (ModelRun::mapsKept false). Default: no limit.
  void keepMapsWithin(uint64_t bytes) { maps_budget_ = bytes; }

 private:
  void embed(const ModelTokens& tokens);
  void layer(int64_t i, const std::vector<std::string>& labels);
  void attention(int64_t i, const Tensor& input, const std::vector<std::string>& labels, Tensor& out);
  void mlp(const HfLayer& w, const Tensor& input, Tensor& out);
  void unembed();  // logits rows [start_, L) that logit_rows_ wants
  void checkTokens(const ModelTokens& tokens) const;
  void forward(const ModelTokens& tokens);  // rows [start_, L) into run_

  std::shared_ptr<const HfModel> model_;
  std::vector<AttentionOptions> options_;  // [N]
  int64_t start_ = 0;  // the first position this run computes; the buffers below hold rows [start_, L)
  Tensor x_, h_, a_, m_, gate_, up_;  // [L, D] residual, normed, attention out, MLP out; [L, M] hidden
  ModelRun run_;
  bool keep_residuals_ = false;
  LogitRows logit_rows_;
  std::vector<DecodeCache> decode_;  // [N] while stepping, else empty
  RunMasks masks_;                   // the last run's mask, shared by its layers
  StepMaps step_maps_ = StepMaps::RowsOnly;
  uint64_t maps_budget_ = UINT64_MAX;
};

}  // namespace attnscope
