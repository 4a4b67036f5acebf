// `attnscope model run MODEL (--text TEXT | --text-file FILE | --ids IDS) --out DIR`: runs a
// trained model folder (attnscope-model/1, or a Hugging Face folder: config.json with a
// model_type, safetensors, tokenizer) on a text and writes every layer's attention, the
// logits and the tokens; prints the top-5 next-token predictions after the last token.
// Same output rules as `compute`: checked before the run, staged, then renamed into place.
// Maps past the full path's budget (ATTNSCOPE_FULL_PATH_BYTES) are not kept: the run keeps
// Q, K and the row normalisers, and attentions.npy is computed from them as it is written.
#include <algorithm>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/model_generate.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "attention/tiles.h"
#include "config/run.h"
#include "config/model_source.h"
#include "model/folder_runner.h"
#include "model/logit_lens.h"
#include "model/model.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

struct ModelRunFlags {
  std::string model;
  ModelTextFlags text;
  std::string ids;  // "1,2,3": token ids instead of a text
  std::string out;
  bool lens = false;  // also write lens_ids.npy and lens_probs.npy
  InterventionFlags interventions;
};

// What the summary prints of either kind of model, and the options its layer l ran with.
struct ModelFacts {
  std::string name;
  int64_t n_layers = 0, n_heads = 0, d_model = 0, context = 0, vocab = 0, unk_id = 0;
  bool causal = true;  // false: an encoder, whose scores at a position are masked-LM guesses
  std::function<AttentionOptions(int64_t)> layer_options;
  std::string cut;  // how a text past the context was truncated ("" when it fit)
  std::string interventions;  // Interventions::describe() ("" when none)
};

// attentions.npy [N, 1, H, L, L], written one map at a time (never stacked in memory); a
// run that kept Q, K and the row normalisers instead of its maps has each map computed
// 64 rows at a time (attention/tiles.h), within 1e-6 of the full path.
void writeAttentions(const std::string& path, const ModelFacts& facts, const ModelRun& run) {
  const AttentionTrace& first = run.layers.front();
  const int64_t N = static_cast<int64_t>(run.layers.size()), H = first.H, L = first.L;
  int64_t layer = 0, h = 0, i0 = 0;
  std::unique_ptr<TiledAttention> tiled;  // the current layer's, past the budget
  writeNpyStream(path, {N, 1, H, L, L}, [&](std::vector<float>& chunk) {
    if (layer == N) return false;
    int64_t rows = L;
    if (run.mapsKept()) {
      const auto map = run.layers[layer].probs.data.begin() + h * L * L;
      chunk.assign(map, map + L * L);
    } else {
      if (!tiled) tiled = std::make_unique<TiledAttention>(tiledFromTrace(run.layers[layer], facts.layer_options(layer)));
      rows = std::min<int64_t>(64, L - i0);
      const Tensor tile = computeTile(*tiled, 0, h, i0, rows, 0, L).probs;
      chunk.assign(tile.data.begin(), tile.data.end());
    }
    if ((i0 += rows) < L) return true;
    i0 = 0;
    if (++h == H) h = 0, ++layer, tiled.reset();
    return true;
  });
}

void printSummary(const ModelFacts& f, const ModelRun& run, const std::vector<Prediction>& top, const std::string& out) {
  const int64_t L = static_cast<int64_t>(run.tokens.ids.size());
  std::cout << "attnscope model run: " << f.name << " (" << f.n_layers << (f.n_layers == 1 ? " layer x " : " layers x ") << f.n_heads
            << " heads, d_model " << f.d_model << ", context " << f.context << ")\n";
  std::cout << "  tokens  " << L;
  if (const int64_t unknown = run.tokens.unknownCount()) {
    std::cout << " (" << unknown << " outside the vocabulary -> unknown id " << f.unk_id << ":";
    for (size_t t = 0, shown = 0; t < run.tokens.ids.size() && shown < 5; ++t)
      if (run.tokens.unknown[t]) std::cout << " '" << run.tokens.label[t] << "'@" << t, ++shown;
    std::cout << ")";
  }
  if (!f.cut.empty()) std::cout << " (" << f.cut << ")";
  if (!f.interventions.empty()) std::cout << "\n  intervened  " << f.interventions;
  std::cout << "\n  wrote   attentions.npy " << shapeToString({f.n_layers, 1, f.n_heads, L, L});
  if (!run.mapsKept())
    std::cout << " (computed from the kept Q, K and row normalisers: the maps are past the full path's budget of "
              << fullPathBudgetBytes() / (1 << 20) << " MiB, ATTNSCOPE_FULL_PATH_BYTES)";
  if (!run.logits.empty()) std::cout << ", logits.npy " << shapeToString({L, f.vocab});
  if (!run.residuals.empty()) std::cout << ", lens_ids.npy and lens_probs.npy " << shapeToString({f.n_layers + 1, L, kLensTop});
  std::cout << ", tokens.txt to " << out << "\n";
  if (top.empty()) {
    std::cout << "  no next-token scores: the folder has no masked-LM head\n";
    return;
  }
  std::string tail;
  for (int64_t t = std::max<int64_t>(0, L - 24); t < L; ++t) tail += run.tokens.label[t];
  std::cout << (f.causal ? "  next token after \"" : "  masked-LM guesses at the last token of \"") << (L > 24 ? "..." : "")
            << tail << "\":\n";
  for (size_t i = 0; i < top.size(); ++i) {  // padded by display width: "␣" is 3 bytes, one column
    const std::string quoted = "'" + top[i].label + "'";
    std::cout << "    " << i + 1 << ". " << quoted << std::string(std::max<int64_t>(0, 8 - displayWidth(quoted)), ' ') << " "
              << std::fixed << std::setprecision(4) << top[i].prob << "  (id " << top[i].id << ")\n";
  }
}

// Writes the outputs of one run (staged, then renamed into place) and prints the summary;
// lens_ids.npy (int64) and lens_probs.npy (float32), [N + 1, L, 5], when the lens is not empty.
int writeRun(const ModelFacts& facts, const ModelRun& run, const std::vector<Prediction>& top, const LogitLens& lens,
             const std::string& out) {
  std::vector<OutputFile> files = {
      {"attentions.npy", [&](const std::string& p) { writeAttentions(p, facts, run); }},
      {"tokens.txt", [&](const std::string& p) { writeFileAtomic(p, tokensText(run.tokens, static_cast<int64_t>(run.tokens.ids.size()))); }}};
  if (!run.logits.empty()) files.push_back({"logits.npy", [&](const std::string& p) { writeNpy(p, run.logits.dense()); }});
  addLensFiles(lens, files);
  writeOutputFiles(out, "model", files);
  printSummary(facts, run, top, out);
  return 0;
}

int modelRun(const ModelRunFlags& flags) {
  const Truncate truncate = truncateOf(flags.text.truncate, flags.text.given());
  const std::string text = flags.text.given() ? readModelText(flags.text) : "";
  const Interventions interventions = flags.interventions.parsed();
  FolderModelRunner runner(flags.model);
  const Model& model = runner.model();
  TextTokens counted;
  if (flags.ids.empty()) {
    counted = textTokens(model, text, truncate);
    if (counted.refused) throw InputError(contextError(model, counted.count, counted.more));
  }
  ModelTokens tokens = flags.ids.empty() ? std::move(counted.tokens) : runner.tokensFromIds(parseIds(flags.ids));
  if (flags.lens && !model.hasHead())
    throw InputError(model.folder + ": --lens needs an output head, and this encoder has no masked-LM head (cls.predictions)");
  checkInterventions(interventions, model.config, static_cast<int64_t>(tokens.ids.size()));
  runner.setInterventions(interventions);
  checkOutDir(flags.out);
  runner.keepResiduals(flags.lens);
  const ModelRun& run = runner.run(std::move(tokens));
  const ModelConfig& c = model.config;
  const int64_t unk_id = model.chars ? model.chars->unkId() : model.tokenizer ? model.tokenizer->unkId().value_or(0) : 0;
  const ModelFacts facts{model.name() + " (" + c.model_type + ")", c.n_layers, c.heads, c.hidden, c.max_positions, c.vocab,
                         unk_id, c.family->causal, [&c](int64_t layer) { return layerOptions(c, layer); },
                         counted.more ? truncatedNote(truncate, counted.count, tokenUnit(model)) : "",
                         interventions.describe()};
  std::vector<Prediction> top;
  if (!run.logits.empty()) top = topPredictions(model, run.logits.row(static_cast<int64_t>(run.tokens.ids.size()) - 1), run.logits.vocab(), 5);
  return writeRun(facts, run, top, modelLens(model, run), flags.out);
}

}  // namespace

std::vector<int64_t> parseIds(const std::string& text, const std::string& flag) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" ", used) != std::string::npos || id < 0)
      throw InputError(flag + ": '" + item + "' is not a token id (give non-negative integers separated by commas)");
    ids.push_back(id);
    at = comma + 1;
  }
  return ids;
}


int runModelCommand(int argc, char** argv) {
  CLI::App app{"Run a trained transformer (a model folder in the attnscope-model/1 format, or a Hugging Face "
               "model folder) on a text.",
               "attnscope model"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "run MODEL on a text: writes attentions.npy [n_layers, 1, H, L, L], "
                                            "logits.npy [L, V] and tokens.txt, prints the top-5 next tokens");
  ModelRunFlags flags;
  run->add_option("MODEL", flags.model,
                  "model folder: config.json, vocab.json, one .npy per tensor (attnscope-model/1); or config.json, "
                  "model.safetensors (or its index and shards) and tokenizer.json (Hugging Face)")->required();
  addModelTextOptions(*run, flags.text);
  run->add_option("--ids", flags.ids, "token ids separated by commas instead of a text");
  run->add_option("--out", flags.out, "output folder (created if missing)")->required();
  addInterventionOptions(*run, flags.interventions);
  run->add_flag("--lens", flags.lens,
                "logit lens: also write lens_ids.npy (int64) and lens_probs.npy (float32), [n_layers + 1, L, 5]: the "
                "top-5 tokens of the output head applied to the embeddings (0) and to the residual stream after each layer");
  GenerateFlags generate;
  CLI::App* gen = app.add_subcommand("generate", "generate N tokens after a prompt through the KV cache: writes "
                                                  "generated.txt, tokens.txt, attentions.npy and steps.json");
  addGenerateOptions(*gen, generate);
  PatchFlags patch;
  CLI::App* patcher = app.add_subcommand("patch", "activation patching: writes patch_heads.npy [n_layers, H], "
                                                  "patch_resid.npy [n_layers, L] and patch.json");
  addPatchOptions(*patcher, patch);
  run->footer(
      "Text longer than the model's context is refused (--truncate keeps its start or end); characters outside the vocabulary\n"
      "become the unknown id (marked 'unknown' in tokens.txt). Exit status: 0 ok, 1 bad input (one\n"
      "line on stderr naming the file), 2 usage error.\n"
      "Example: attnscope model run assets/models/python-code --text 'def f(x):' --out result");
  return runCommand(app, argc, argv, [&] {
    if (gen->parsed()) return modelGenerate(generate);
    if (patcher->parsed()) return modelPatch(patch);
    if (!flags.text.given() && flags.ids.empty()) throw UsageError("run: give --text TEXT, --text-file FILE or --ids IDS");
    if (flags.text.given() && !flags.ids.empty()) throw UsageError("run: give either a text or --ids, not both");
    return modelRun(flags);
  });
}

void addLensFiles(const LogitLens& lens, std::vector<OutputFile>& files) {
  if (lens.empty()) return;
  const Shape shape = {lens.layers, lens.positions, lens.k};
  files.push_back({"lens_ids.npy", [&lens, shape](const std::string& p) { writeNpyInt64(p, shape, lens.ids); }});
  files.push_back({"lens_probs.npy", [&lens, shape](const std::string& p) {
                     Tensor probs(shape);
                     probs.data.assign(lens.probs.begin(), lens.probs.end());
                     writeNpy(p, probs);
                   }});
}

}  // namespace attnscope
