// The model runtime: one model contract for every folder kind, one runner. A model folder is
// a Hugging Face folder (config.json with a model_type, model.safetensors or its shards,
// the tokenizer: model/hf_folder.cpp) or an attnscope-model/1 folder (config.json with its
// format, .npy tensors, vocab.json: model/own_folder.cpp); either becomes a Model of its
// family (model/family.h, model/families/). The forward pass follows the family's
// declaration; every layer's attention goes through the attention core's cached rows (GQA,
// RoPE with scaled / partial inverse frequencies, per-head q/k norms, soft-cap, sliding
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
#include "model/char_vocab.h"
#include "model/interventions.h"
#include "model/model_config.h"
#include "model/model_run.h"
#include "model/truncate.h"
#include "tensor/interrupt.h"
#include "tokenizer/tokenizer.h"

namespace attnscope {

struct NormWeights {
  Tensor weight, bias;  // [D]; bias empty for RMSNorm
  bool empty() const { return weight.empty(); }
};

struct Linear {
  Weights weight;  // nn.Linear: [out, in]
  Tensor bias;     // [out] or empty
};

struct LayerWeights {
  NormWeights attn_norm, post_attn_norm, mlp_norm, post_mlp_norm;
  // [d] per-head RMSNorm of q and k (Role::QNorm, KNorm), or [H*d] / [G*d] over the whole
  // projection (Role::QProjNorm, KProjNorm), or empty; their scale as applied (a family with
  // Norm::RmsNormPlusOne has 1 + w here, added at load).
  NormWeights q_norm, k_norm;
  Linear q, k, v, o;  // q [H*d, D], k/v [G*d, D], o [D, H*d]
  Linear gate, up, down;  // gate only for gated MLPs
  Projections projections() const;  // q .. o for attendRows (they must outlive it)
};

// A training log's notable head (attnscope-model/1's training.json "notable_heads"): the
// best head for one pattern score.
struct NotableHead {
  std::string pattern;  // "previous_token", "induction", ...
  int64_t layer = 0, head = 0;
  double score = 0.0;
};

struct Model {
  std::string folder;
  ModelConfig config;
  Weights embed;          // [V, D]
  Tensor positions;       // [P, D] learned positions, or empty
  Tensor token_type;      // [D]: token type 0 (BERT), or empty
  NormWeights embed_norm, final_norm;
  std::vector<LayerWeights> layers;  // [N]
  Weights lm_head;        // [V, D] when untied (tied: empty, `embed` is the head, not copied)
  bool head_tied = false;  // the embedding is the unembedding (tie_word_embeddings)
  // The unembedding [V, D]: lm_head, or the embedding when tied; empty for an encoder without MLM head.
  const Weights& unembedding() const { return head_tied ? embed : lm_head; }
  bool hasHead() const { return !unembedding().empty(); }
  Tensor lm_bias;         // [V] or empty
  Linear mlm_transform;  // BERT's cls.predictions.transform (dense + LayerNorm)
  NormWeights mlm_norm;
  std::string tensor_prefix;  // "model.", "transformer.", ... or "" (saved from a base class)
  std::optional<HfTokenizer> tokenizer;  // none when the folder has no tokenizer files
  std::optional<CharVocab> chars;        // attnscope-model/1: its characters or bytes instead
  std::string display_name;  // attnscope-model/1's config "name" ("" = the folder's name)
  std::string caption;       // what the app says of the model (training.json, or the family and folder)
  std::vector<NotableHead> notable_heads;  // training.json's, best score first; may be empty
  std::string name() const;  // display_name, else the folder's name
  int64_t context() const { return config.max_positions; }
};

// Reads a model folder of either kind: config.json, maps and validates every tensor,
// converts the weights (memory rule above) and loads the tokenizer when the folder has one.
// InputError naming the file (and the tensor or field) on any problem. progress (optional)
// follows the conversion, as the fraction of the bytes converted; returning false stops the
// load (Cancelled).
// A store name (hf:ORG/NAME, ollama:NAME[:TAG]) is resolved first (model/local_models.h).
Model loadModel(const std::string& folder, bool with_tokenizer = true, const Progress& progress = {});
// What loadModel checks before it reads a weight, as quickly as reading headers: config.json,
// every tensor the family reads (present, its shape and dtype), each weight file's size
// against its header (truncated), the memory rule; an attnscope-model/1 folder (small) is
// loaded. The same InputError as loadModel's. The app's Open dialog runs it before it
// switches to a folder, so that a folder that cannot load never replaces the model shown.
void checkModelFolder(const std::string& folder);
Model loadHfFolder(const std::string& folder, bool with_tokenizer, const Progress& progress);  // hf_folder.cpp
void checkHfFolder(const std::string& folder);                                               // hf_folder.cpp
Model loadOwnFolder(const std::string& folder);                                               // own_folder.cpp

// The model's tokens of a text: its tokenizer (add_special_tokens = true; labels are the
// readable labels escaped to one line, unknown marks the unk token) or attnscope-model/1's
// characters or bytes. InputError when the folder has no tokenizer.
ModelTokens tokenizeForModel(const Model& model, const std::string& text);
// A text's tokens for a run (model run, export, analyze, generate, the app): all of them when
// they fit the context; past it, the first or last context's worth (truncate), or InputError
// (contextError). Tokenizing stops once the context is passed, and the text is counted to
// count_to tokens at most (at least the context): `count` says how many it has, and `more`
// that it has more than that.
struct TextTokens {
  ModelTokens tokens;  // what the run reads (nothing when refused)
  int64_t count = 0;   // the text's tokens, up to count_to
  bool more = false;   // the text has more than `count`
  bool refused = false;  // too long, and not truncated
};
// room: tokens a truncated text leaves free after it (a generation's new tokens).
TextTokens textTokens(const Model& model, const std::string& text, Truncate truncate, int64_t count_to = 0,
                      int64_t room = 0);
// textTokens' tokens, or InputError(contextError) for a text that does not fit.
ModelTokens tokensForRun(const Model& model, const std::string& text, Truncate truncate, int64_t room = 0);
// "the text has [more than] N tokens but NAME's context is C (KEY in CONFIG)".
std::string contextError(const Model& model, int64_t count, bool more);
// Token ids given directly; labels from the tokenizer when there is one, else the ids.
// InputError for an id outside the vocabulary (checkTokenId).
ModelTokens tokensFromIds(const Model& model, const std::vector<int64_t>& ids);
// InputError "token id N is outside the vocabulary (vocab_size V in CONFIG)" unless 0 <= id < V.
void checkTokenId(const Model& model, int64_t id);
// Token `id` as one printable line ("#id" without a tokenizer or past its vocabulary).
std::string tokenLabel(const Model& model, int64_t id);
// The labels of a sequence of ids, as tokenizeForModel labels a text's (a character spelled
// in byte-fallback pieces shows on its first piece, "·" on the others).
std::vector<std::string> tokenLabels(const Model& model, const std::vector<int64_t>& ids);
// A token's text as typed (the labels' marks back to a space, newline and tab).
std::string tokenText(const Model& model, int64_t id);
// What the model's tokens are called in messages: "tokens", or "characters" / "bytes".
const char* tokenUnit(const Model& model);
// The k most likely next tokens after a position (softmax of its logits [V]), best first.
std::vector<Prediction> topPredictions(const Model& model, const float* logits, int64_t V, int64_t k);

// The output head on residual rows x [rows, D] (any positions: a row's logits do not depend on
// the others): logits [rows, V] (final norm, lm_head or BERT's MLM head, final soft-capping).
// The model must have a head (lm_head not empty).
void modelOutputLogits(const Model& model, const Tensor& x, float* logits);
RowHead modelHead(const Model& model);  // modelOutputLogits as a RowHead (the model must outlive it)

// Layer `layer`'s attention options from the config (GQA, scale, soft-cap, causal window, RoPE)
// on a text of L tokens (longrope's factors depend on it: RopeParams::longAt; 0: the short ones).
AttentionOptions layerOptions(const ModelConfig& config, int64_t layer, int64_t L = 0);

// Runs one model on token after token of text; buffers are kept between runs. A causal
// model keeps each layer's K, V and map rows (attention/cached_rows.h): a run computes from
// the first token that differs from the last run's and equals a from-scratch run bit for
// bit; ModelRun::first_computed says where it started.
class ModelRunner {
 public:
  explicit ModelRunner(std::shared_ptr<const Model> model);
  // InputError for no tokens, more tokens than the context, or an id outside the vocabulary.
  const ModelRun& run(ModelTokens tokens);
  const ModelRun& run(const std::string& text) { return run(tokenizeForModel(*model_, text)); }
  // Generation: `tokens` = the last run's plus one (canStep; run() otherwise) computes
  // that one position through each layer's decode cache (one row, ModelRun::decoded_from).
  const ModelRun& step(ModelTokens tokens, StepMaps maps = StepMaps::RowsOnly);
  void reset();  // forget the cache: the next run computes every row
  // A new runner on the same model with this one's settings (cache window, residuals, logits
  // rows, maps budget), no interventions and nothing cached: a sweep's second thread.
  ModelRunner sibling() const;
  const Model& model() const { return *model_; }
  const ModelRun& last() const { return run_; }
  // Keep the residual stream after every layer in ModelRun::residuals (the logit lens).
  void keepResiduals(bool keep);
  // Interventions (model/interventions.h) on the runs from now on; InputError for a layer or
  // head outside the model (knockouts at positions past a text are left out of its runs).
  // The next run recomputes from the first layer and position a change touches: the layers
  // and rows before it come from the last run (each layer's input is kept while any
  // intervention is set). Generation steps run whole rows (run()) while any is set.
  void setInterventions(Interventions interventions);
  const Interventions& interventions() const { return interventions_; }
  // The positions whose logits each run computes (default: all).
  void logitRows(LogitRows rows) { logit_rows_ = std::move(rows); }
  // Sinks + causal window on every layer (attention/kv_cache.h); a change forgets the cache.
  void setCacheWindow(const CacheWindow& cache);
  // A run whose maps (modelMapBytes) exceed `bytes` keeps Q, K and the row normalisers
  // instead (ModelRun::mapsKept false). Default: no limit.
  void keepMapsWithin(uint64_t bytes) { maps_budget_ = bytes; }
  // Runs keep their score maps beside the probabilities (default). false: probabilities only
  // (a generation's runs, which collect probability rows: half the maps' memory).
  void keepScores(bool keep) { keep_scores_ = keep; }
  // The last run's traces, read-only and not copied (the app's view of each keystroke; its
  // maps are most of a run's memory). They move out of the run: until the next run, its
  // ModelRun::layers hold sizes only. The next run writes into other storage while a shared
  // trace is still held, copying the rows it keeps from it (the storage of a trace shared
  // before and released since, so no fresh pages), or takes the traces back when nobody
  // holds them. A run that did not keep its maps (ModelRun::mapsKept) shares nothing.
  std::vector<std::shared_ptr<const AttentionTrace>> shareTraces();
  // ModelRun::layers whole again after shareTraces (copied while a shared trace is held): for
  // a caller that reads them after a run() in which nothing changed (which leaves them shared).
  void unshareTraces() { takeBackTraces(true); }

 private:
  void embed(const ModelTokens& tokens);
  void layer(int64_t i, const std::vector<std::string>& labels);
  void attention(int64_t i, const Tensor& input, const std::vector<std::string>& labels, Tensor& out);
  void mlp(const LayerWeights& w, const Tensor& input, Tensor& out);
  void unembed();  // logits rows [start_, L) that logit_rows_ wants
  void checkTokens(const ModelTokens& tokens) const;
  void chooseRopeFactors(int64_t L);  // longrope's factor set for L tokens; a change forgets the cache
  void forward(const ModelTokens& tokens, const std::vector<int64_t>& starts);  // layer i's rows [starts[i], L) into run_
  // Per layer [N], the first row this run computes: from the first changed token, lowered
  // where the interventions changed (changedRows) and to 0 from a changed mean ablation on.
  // attention_kept [N]: 1 where the layer's attention is the last run's (its input rows, tokens
  // and knockouts unchanged: only its z edits changed), so only its output rows are computed.
  std::vector<int64_t> layerStarts(const ModelTokens& tokens, int64_t prefix, std::vector<uint8_t>& attention_kept) const;
  Tensor& inputStore();                            // where layer inputs are kept
  void resume(const Tensor& kept, int64_t layer, int64_t start);  // x_ widened to rows [start, L) from kept inputs
  void patchResiduals(int64_t layer, int64_t L);                 // ResidualPatch rows of x_ entering `layer`
  void takeBackTraces(bool copy);  // run_.layers from shared_ (copy: even while they are held)

  std::shared_ptr<const Model> model_;
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
  bool keep_scores_ = true;
  bool last_kept_scores_ = true;  // of the last run: its rows are reused only by runs that keep them alike
  // shareTraces: the last run's traces as lent ([N], or empty), and the storage of those lent
  // before ([N] or empty), reused once nobody else holds it. During a run, kept_from_[i] is
  // the trace whose rows layer i keeps (null: run_.layers[i] itself).
  std::vector<std::shared_ptr<AttentionTrace>> shared_, spare_;
  std::vector<const AttentionTrace*> kept_from_;
  Interventions interventions_, applied_;  // set, and those the last run's rows hold
  HeadEdits edits_;                        // the current layer's
  std::vector<uint8_t> attention_kept_;    // [N] during a run (layerStarts), else empty
  FloatBuffer z_rows_;                     // scratch: a kept attention's z rows into its output
  Tensor layer_inputs_;                    // [N + 1, L, D] without keep_residuals_: layer i's input in slot i
  bool inputs_kept_ = false;               // the last run left every layer's input in inputStore()
  bool long_rope_ = false;                 // options_ rotate by longrope's long factors (longRopeAt)
};

}  // namespace attnscope
