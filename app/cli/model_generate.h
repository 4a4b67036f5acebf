// `attnscope model generate MODEL --text PROMPT --tokens N [--greedy | --temperature T
// --top-k K --top-p P --seed S] [--window W [--sinks K]] --out DIR`: generation through the runner's KV cache
// (model/generate.h); writes generated.txt, tokens.txt, attentions.npy and steps.json.
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/out_folder.h"
#include "cli/run_options.h"
#include "config/generation_bundle.h"
#include "model/ablation_sweep.h"
#include "model/generate.h"
#include "model/logit_lens.h"
#include "model/model.h"
#include "model/patching.h"

namespace attnscope {

struct GenerateFlags {
  std::string model;
  ModelTextFlags text;
  std::string ids;  // Hugging Face folders: prompt token ids
  int64_t tokens = 0;
  bool greedy = false;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  bool lens = false;  // also lens_ids.npy and lens_probs.npy over the final sequence
  std::optional<int64_t> window, sinks;  // the cache's causal window W and sinks k (CacheWindow)
  InterventionFlags interventions;       // on every step (a knockout past the prompt applies once reached)
  std::string out;
};

void addGenerateOptions(CLI::App& app, GenerateFlags& flags);

// A causal folder of either kind, loaded with its runner (kept alive by the functions).
// InputError for an encoder or a folder without language-model head.
struct Loaded {
  CausalModel model;
  std::function<void(const Interventions&)> set_interventions;  // InputError outside the model
  std::string name;
  int64_t vocab = 0;
  std::function<std::string(int64_t)> text;  // a token's text (generated.txt)
  // A prompt's tokens (FolderModelRunner::tokenize: a truncated one leaves `room` tokens free).
  std::function<ModelTokens(const std::string&, Truncate truncate, int64_t room)> encode;
  std::function<ModelTokens(const std::vector<int64_t>&)> from_ids;
  std::function<void()> reset;  // forget the runner's cache
  std::function<void(const CacheWindow&)> set_window;  // sinks + causal window on every layer
  std::function<void(const LogitRows&)> logit_rows;     // the positions each run unembeds
  std::function<void(bool)> keep_scores;  // runs keep their score maps (false: a generation's, probabilities only)
  std::function<LogitLens(const ModelTokens&)> lens;  // the logit lens of a token sequence
  // Activation patching (FolderModelRunner::patch): the sweep leaves no interventions set.
  std::function<PatchTables(const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer, int64_t wrong)> patch;
  int64_t n_layers = 0, heads = 0;
  std::function<AblationSweep(const ModelTokens&, AblationMode)> sweep;  // at the last position (bench --sweep)
};
Loaded loadCausalModel(const std::string& folder);
int modelGenerate(const GenerateFlags& flags);

// tokensText (tokens.txt) and stepsJson: config/generation_bundle.h.

// lens_ids.npy (int64) and lens_probs.npy (float32), [N + 1, L, 5], when the lens is not
// empty (model run and model generate --lens); the files refer to lens, which must outlive them.
void addLensFiles(const LogitLens& lens, std::vector<OutputFile>& files);

// "1, 2,3" -> {1, 2, 3}; InputError naming `flag` for anything else.
std::vector<int64_t> parseIds(const std::string& text, const std::string& flag = "--ids");

// `model patch` (model_patch.cpp): activation patching, see docs/cli.md.
struct PatchFlags {
  std::string model;
  std::optional<std::string> clean, clean_ids, corrupt, corrupt_ids, answer, wrong;
  std::optional<int64_t> answer_id, wrong_id;
  std::string out;
  bool json = false;
};
void addPatchOptions(CLI::App& app, PatchFlags& flags);
int modelPatch(const PatchFlags& flags);

}  // namespace attnscope
