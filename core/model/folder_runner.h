// A model folder of either kind as the app and the commands run it: loaded once, run on text
// after text (FolderModelRunner), each run made into the view model every panel draws.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/ablation_sweep.h"
#include "model/generate.h"
#include "model/logit_lens.h"
#include "model/patching.h"
#include "model/model.h"
#include "view/view_model.h"

namespace attnscope {

// The view of one model run: one layer per block (probabilities, scores, causal mask),
// query/key labels with unknown characters marked "(unk)" (a tokenizer's unknown token reads
// as its name, "[UNK]", the text it stands for in its piece's tooltip), the top-5 predictions after every
// position (an encoder's masked-LM guesses at it; none without an output head), the logit
// lens (when the run kept its residuals), the model's name, caption and notable heads, and
// a tokenizer's raw pieces for the tooltips.
// A run past the full path's budget (ModelRun::mapsKept false) is shown in tiles: every
// layer's overview, pooled with progress (returning false cancels: Cancelled).
// lens false: no logit lens from the run's residuals (the caller makes it column by column).
// traces: the run's, shared by its runner (ModelRunner::shareTraces); empty: copied from run.
// Every layer's LayerFacts are in the view (layer_facts).
ViewModel viewFromModelRun(const Model& model, const ModelRun& run, const Progress& progress = {}, bool lens = true,
                           std::vector<std::shared_ptr<const AttentionTrace>> traces = {});

// Layer `layer`'s facts for the view (ViewModel::layer_facts): its sizes, window, positions
// (the layer's RoPE base and rotary features, or none on a NoPE layer), q/k norm, soft-cap and
// scale, from the same config as layerOptions.
LayerFacts layerFacts(const ModelConfig& config, int64_t layer);

// A loaded model folder's weights, shared read-only by every runner on it:
// the app's maps and its generation run on one copy.
struct FolderWeights {
  std::string folder;
  std::shared_ptr<const Model> model;
  bool loaded() const { return model != nullptr; }
};
// Reads either kind of folder (progress: as FolderModelRunner's). InputError naming the file.
FolderWeights loadFolderWeights(const std::string& folder, const Progress& progress = {});

// A model folder of either kind (attnscope-model/1, or Hugging Face: config.json with a
// model_type), loaded once and run on text after text (one keystroke after another):
// what the app's worker can keep between runs. InputError naming the file on bad input.
class FolderModelRunner {
 public:
  // progress follows a Hugging Face folder's weights as they are converted (loadModel);
  // returning false stops the load (Cancelled). An attnscope-model/1 folder (small .npy
  // files) loads without it.
  explicit FolderModelRunner(const std::string& folder, const Progress& progress = {});
  // A second runner (its own KV cache) on weights another runner loaded: nothing is read or copied.
  explicit FolderModelRunner(const FolderWeights& weights);
  ~FolderModelRunner();
  const FolderWeights& weights() const { return weights_; }
  // Sinks + causal window on every layer (attention/kv_cache.h); a change forgets the cache.
  void setCacheWindow(const CacheWindow& cache);
  // Interventions on every run from now on (ModelRunner::setInterventions: InputError for a
  // layer or head outside the model).
  void setInterventions(Interventions interventions) { runner_->setInterventions(std::move(interventions)); }
  const Interventions& interventions() const { return runner_->interventions(); }
  // Activation patching on this runner (model/patching.h: patchSweep; it leaves no interventions set).
  PatchTables patch(const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer, int64_t wrong,
                    const Progress& progress = {}) {
    return patchSweep(*runner_, clean, corrupt, answer, wrong, progress);
  }
  // The ablation sweep on this runner (model/ablation_sweep.h; it leaves no interventions set).
  AblationSweep sweep(const ModelTokens& tokens, int64_t position, AblationMode mode, const Progress& progress = {}) {
    return ablationSweep(*runner_, tokens, position, mode, progress);
  }
  // The text's size against the model's context, counted before the run (a text that does
  // not fit is refused by the run, with this count for the app to show).
  // A text past the context is counted to 4 contexts (`more`: it has more than `tokens`);
  // the run refuses it, or with `truncate` reads its first or last context's worth (`cut`).
  struct TextSize {
    int64_t tokens = 0, context = 0;
    const char* unit = "tokens";  // "characters" or "bytes" for attnscope-model/1 tokenizers
    bool more = false, cut = false;
  };
  // viewFromModelRun of one run (progress: of a tiled view's overviews);
  // fills *size first when given. logit_rows: the positions to unembed (default all); with
  // others, the view's more_predictions computes the rest on demand. The logit lens is made
  // whole within the lens budget ((N + 1) L D V multiply-adds); past it, with
  // lens_on_demand, column by column when looked at (ViewModel::lens.later), else it is off
  // with the reason.
  ViewModel view(const std::string& text, TextSize* size = nullptr, const LogitRows& logit_rows = {},
                 const Progress& progress = {}, bool lens_on_demand = false, Truncate truncate = Truncate::None);
  // The lens budget in multiply-adds (default 1e10: 19 tokens of GPT-2 small, 0.1 s).
  void setLensBudget(double multiply_adds) { lens_budget_ = multiply_adds; }
  // Whether the lens of `positions` positions fits the budget.
  bool lensFits(int64_t positions) const;
  // Runs made through causalModel (generation) keep every layer's residual stream, for
  // lensColumns; view() sets it for its own runs.
  void keepResiduals(bool keep);
  // Runs whose maps pass `bytes` keep Q and K instead (default: fullPathBudgetBytes()).
  void keepMapsWithin(uint64_t bytes) { runner_->keepMapsWithin(bytes); }
  void keepScores(bool keep) { runner_->keepScores(keep); }
  // Lens columns [first, first + count) of a run that kept its residuals (labelled as the
  // view's); a generation computes its new positions' columns with each step.
  LensColumns lensColumns(const ModelRun& run, int64_t first, int64_t count) const;
  // Generation (model/generate.h) on this folder's runner: the text's tokens, the causal
  // model (InputError for an encoder), each run's view (viewFromModelRun,
  // without the whole logit lens: a generation adds its new positions' columns, lensColumns)
  // and a token's text as typed.
  // tokensForRun: the text's tokens within the context (room: left free after a truncated text).
  ModelTokens tokenize(const std::string& text, Truncate truncate = Truncate::None, int64_t room = 0) const;
  ModelTokens tokensFromIds(const std::vector<int64_t>& ids) const;
  CausalModel causalModel(StepMaps maps = StepMaps::RowsOnly);
  ViewModel viewOf(const ModelRun& run) const;
  std::string tokenText(int64_t id) const;
  const std::string& folder() const { return folder_; }
  const Model& model() const { return *weights_.model; }
  // One run of every row's logits, for the commands that write a run's files (`model run`):
  // the same runner, options and budgets as view()'s.
  const ModelRun& run(ModelTokens tokens);
  // For the commands that drive the causal model themselves (`model generate`, `bench
  // --model`): the positions each run unembeds, forgetting the kept rows, and the logit lens
  // of a token sequence (one more run, with the residuals kept).
  void logitRows(const LogitRows& rows) { runner_->logitRows(rows); }
  void reset() { runner_->reset(); }
  LogitLens lens(ModelTokens tokens) { return lensOfTokens(*runner_, std::move(tokens)); }
  // Every layer's attention sizes: H*d is not always the width (Gemma-2-2B: 8 x 256 of
  // 2304; Qwen3), and G < H under grouped-query attention.
  struct AttentionShape {
    int64_t heads = 0, kv_heads = 0, head_dim = 0, width = 0;  // H, G, d, d_model
    bool qkv_bias = false;                                      // q, k and v projections add a bias
  };
  const AttentionShape& attentionShape() const { return shape_; }
  // Wall time of the last view()'s model run (tokenize to logits, the engine's part of a
  // keystroke), in milliseconds.
  double lastRunMs() const { return last_run_ms_; }

 private:
  std::string folder_;
  FolderWeights weights_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<ModelRunner> baseline_;  // while interventions are set: the same texts without them (its own cache)
  // ViewModel::baseline_next of `tokens` (nothing without interventions or an output head).
  std::vector<double> baselineNext(const ModelTokens& tokens);
  OutputHead outputHead() const;                          // the logit lens's head (model/logit_lens.h)
  std::function<std::string(int64_t)> tokenLabels() const;  // an id's label, as the maps show it
  AttentionShape shape_;
  int64_t n_layers_ = 0, vocab_ = 0;
  double lens_budget_ = 1e10;
  double last_run_ms_ = 0.0;
};

// One run of FolderModelRunner: the one path from settings to a model's view (buildView).
// InputError for interventions outside the model or the text. pooled_maps: a text longer than
// kTextureMaxSide keeps Q and K instead of its maps and is shown in tiles (its pooled
// overview; a caller that never needs the full maps: an HTML page, a fraction of the memory).
ViewModel viewOfModelFolder(const std::string& folder, const std::string& text, Truncate truncate = Truncate::None,
                            const Interventions& interventions = {}, bool pooled_maps = false);

}  // namespace attnscope
