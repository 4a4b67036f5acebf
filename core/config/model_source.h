// Trained models as an input source (Settings::source == InputSource::Model): where the
// shipped models are, which folder the settings' `model` names, and the view model of a
// model run (every layer's maps, next-token predictions, the caption of training.json).
// The app's worker, `attnscope export MODEL --text` and `attnscope MODEL` all go through here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "model/generate.h"
#include "model/hf_model.h"
#include "model/logit_lens.h"
#include "model/transformer.h"
#include "view/view_model.h"

namespace attnscope {

// The assets folder: $ATTNSCOPE_ASSETS when set, else the first of EXE_DIR/assets,
// EXE_DIR/../assets, EXE_DIR/../share/attnscope/assets and the source tree's assets/ that
// has a models/ folder; "" when none has.
std::string assetsDir();

// The models shipped in ASSETS/models (folders with a config.json), sorted by name.
struct ShippedModel {
  std::string name;    // the folder's name, e.g. "python-code"
  std::string folder;  // its path
};
std::vector<ShippedModel> shippedModels();

// A text that shows what a shipped model does (the default text when it is picked);
// "" for models without one.
std::string sampleText(const std::string& model_name);
// The text to show when switching to model_name: its sample when the current text is empty
// or another model's untouched sample, else the user's text (never lost).
std::string textForModel(const std::string& current, const std::string& model_name);

// True when dir holds a config.json (a model folder of either kind, not a tensor or
// attention bundle).
bool isModelFolder(const std::string& dir);

// The folder settings.model names: a path when it has a '/', else ASSETS/models/NAME.
// InputError when a shipped model is missing, saying where it was looked for.
std::string modelFolder(const Settings& settings);

// base with source = Model, model = folder (made absolute) and model_text = text.
Settings settingsForModel(Settings base, const std::string& folder, const std::string& text);
// The same on base's own text, or the model's sample (textForModel): opening a folder in the app.
Settings settingsForModel(Settings base, const std::string& folder);

// The view of one model run: one layer per block (probabilities, scores, causal mask),
// query/key labels with unknown characters marked "(unk)", the top-5 predictions after
// every position, the logit lens (when the run kept its residuals), the model's name,
// caption and notable heads.
// A run past the full path's budget (ModelRun::mapsKept false) is shown in tiles: every
// layer's overview, pooled with progress (returning false cancels: Cancelled).
// lens false: no logit lens from the run's residuals (the caller makes it column by column).
ViewModel viewFromModelRun(const Model& model, const ModelRun& run, const Progress& progress = {}, bool lens = true);
// The same for a Hugging Face folder: labels from its tokenizer; no predictions for an
// encoder without masked-LM head (its MLM guesses otherwise).
ViewModel viewFromHfRun(const HfModel& model, const ModelRun& run, const Progress& progress = {}, bool lens = true);

// A loaded model folder's weights (one kind set), shared read-only by every runner on it:
// the app's maps and its generation run on one copy.
struct FolderWeights {
  std::string folder;
  std::shared_ptr<const Model> own;   // attnscope-model/1
  std::shared_ptr<const HfModel> hf;  // Hugging Face
  bool loaded() const { return own || hf; }
};
// Reads either kind of folder (progress: as FolderModelRunner's). InputError naming the file.
FolderWeights loadFolderWeights(const std::string& folder, const Progress& progress = {});

// A model folder of either kind (attnscope-model/1, or Hugging Face: config.json with a
// model_type), loaded once and run on text after text (one keystroke after another):
// what the app's worker can keep between runs. InputError naming the file on bad input.
class FolderModelRunner {
 public:
  // progress follows a Hugging Face folder's weights as they are converted (loadHfModel);
  // returning false stops the load (Cancelled). An attnscope-model/1 folder (small .npy
  // files) loads without it.
  explicit FolderModelRunner(const std::string& folder, const Progress& progress = {});
  // A second runner (its own KV cache) on weights another runner loaded: nothing is read or copied.
  explicit FolderModelRunner(const FolderWeights& weights);
  ~FolderModelRunner();
  const FolderWeights& weights() const { return weights_; }
  // Sinks + causal window on every layer (attention/kv_cache.h); a change forgets the cache.
  void setCacheWindow(const CacheWindow& cache);
  // The text's size against the model's context, counted before the run (a text that does
  // not fit is refused by the run, with this count for the app to show).
  struct TextSize {
    int64_t tokens = 0, context = 0;
    const char* unit = "tokens";  // "characters" or "bytes" for attnscope-model/1 tokenizers
  };
  // viewFromModelRun / viewFromHfRun of one run (progress: of a tiled view's overviews);
  // fills *size first when given. logit_rows: the positions to unembed (default all); with
  // others, the view's more_predictions computes the rest on demand. The logit lens is made
  // whole within the lens budget ((N + 1) L D V multiply-adds); past it, with
  // lens_on_demand, column by column when looked at (ViewModel::lens.later), else it is off
  // with the reason.
  ViewModel view(const std::string& text, TextSize* size = nullptr, const LogitRows& logit_rows = {},
                 const Progress& progress = {}, bool lens_on_demand = false);
  // The lens budget in multiply-adds (default 1e10: 19 tokens of GPT-2 small, 0.1 s).
  void setLensBudget(double multiply_adds) { lens_budget_ = multiply_adds; }
  // Whether the lens of `positions` positions fits the budget.
  bool lensFits(int64_t positions) const;
  // Runs made through causalModel (generation) keep every layer's residual stream, for
  // lensColumns; view() sets it for its own runs.
  void keepResiduals(bool keep);
  // Lens columns [first, first + count) of a run that kept its residuals (labelled as the
  // view's); a generation computes its new positions' columns with each step.
  LensColumns lensColumns(const ModelRun& run, int64_t first, int64_t count) const;
  // Generation (model/generate.h) on this folder's runner: the text's tokens, the causal
  // model (InputError for an encoder), each run's view (viewFromModelRun / viewFromHfRun,
  // without the whole logit lens: a generation adds its new positions' columns, lensColumns)
  // and a token's text as typed.
  ModelTokens tokenize(const std::string& text) const;
  CausalModel causalModel(StepMaps maps = StepMaps::RowsOnly);
  ViewModel viewOf(const ModelRun& run) const;
  std::string tokenText(int64_t id) const;
  const std::string& folder() const { return folder_; }
  // Every layer's attention sizes: H*d is not always the width (Gemma-2-2B: 8 x 256 of
  // 2304; Qwen3), and G < H under grouped-query attention.
  struct AttentionShape {
    int64_t heads = 0, kv_heads = 0, head_dim = 0, width = 0;  // H, G, d, d_model
    bool qkv_bias = false;                                      // q, k and v projections add a bias
  };
  const AttentionShape& attentionShape() const { return shape_; }

 private:
  std::string folder_;
  FolderWeights weights_;
  std::unique_ptr<ModelRunner> own_;  // attnscope-model/1
  std::unique_ptr<HfRunner> hf_;      // Hugging Face
  OutputHead outputHead() const;                          // the logit lens's head (model/logit_lens.h)
  std::function<std::string(int64_t)> tokenLabels() const;  // an id's label, as the maps show it
  AttentionShape shape_;
  int64_t n_layers_ = 0, vocab_ = 0;
  double lens_budget_ = 1e10;
};

// One run of FolderModelRunner: the one path from settings to a model's view (buildView).
ViewModel viewOfModelFolder(const std::string& folder, const std::string& text);

}  // namespace attnscope
