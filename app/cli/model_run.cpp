// `attnscope model run MODEL (--text TEXT | --text-file FILE) --out DIR`: runs a trained
// model folder (attnscope-model/1) on a text and writes every layer's attention, the
// logits and the tokens; prints the top-5 next-token predictions after the last token.
// Same output rules as `compute`: checked before the run, staged, then renamed into place.
#include <iomanip>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "model/transformer.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

struct ModelRunFlags {
  std::string model;
  ModelTextFlags text;
  std::string out;
};

// attentions [N, 1, H, L, L]: every layer's probabilities, stacked.
Tensor stackAttentions(const ModelRun& run) {
  const AttentionTrace& first = run.layers.front();
  Tensor out({static_cast<int64_t>(run.layers.size()), 1, first.H, first.L, first.S});
  const size_t per_layer = first.probs.data.size();
  for (size_t i = 0; i < run.layers.size(); ++i)
    std::copy(run.layers[i].probs.data.begin(), run.layers[i].probs.data.end(), out.data.begin() + i * per_layer);
  return out;
}

// tokens.txt: one line per position, "position<TAB>id<TAB>token" (escaped: \n, \t, \\, \xNN),
// with a fourth column "unknown" when the character is outside the vocabulary.
std::string tokensText(const ModelTokens& tokens) {
  std::string out;
  for (size_t t = 0; t < tokens.ids.size(); ++t) {
    out += std::to_string(t) + "\t" + std::to_string(tokens.ids[t]) + "\t" + tokens.label[t];
    out += tokens.unknown[t] ? "\tunknown\n" : "\n";
  }
  return out;
}

void printSummary(const Model& model, const ModelRun& run, const std::string& out) {
  const ModelConfig& c = model.config;
  const int64_t L = static_cast<int64_t>(run.tokens.ids.size());
  std::cout << "attnscope model run: " << c.name << " (" << c.n_layers << (c.n_layers == 1 ? " layer x " : " layers x ") << c.n_heads
            << " heads, d_model " << c.d_model << ", context " << c.max_len << ")\n";
  std::cout << "  tokens  " << L;
  if (const int64_t unknown = run.tokens.unknownCount()) {
    std::cout << " (" << unknown << " outside the vocabulary -> unknown id " << c.unk_id << ":";
    for (size_t t = 0, shown = 0; t < run.tokens.ids.size() && shown < 5; ++t)
      if (run.tokens.unknown[t]) std::cout << " '" << run.tokens.label[t] << "'@" << t, ++shown;
    std::cout << ")";
  }
  std::cout << "\n  wrote   attentions.npy " << shapeToString({c.n_layers, 1, c.n_heads, L, L}) << ", logits.npy "
            << shapeToString({L, c.vocab_size}) << ", tokens.txt to " << out << "\n";
  std::string tail;
  for (int64_t t = std::max<int64_t>(0, L - 24); t < L; ++t) tail += run.tokens.label[t];
  std::cout << "  next token after \"" << (L > 24 ? "..." : "") << tail << "\":\n";
  const std::vector<Prediction> top = topPredictions(model, run.logits, L - 1, 5);
  for (size_t i = 0; i < top.size(); ++i)
    std::cout << "    " << i + 1 << ". " << std::left << std::setw(8) << ("'" + top[i].label + "'") << std::right
              << std::fixed << std::setprecision(4) << top[i].prob << "  (id " << top[i].id << ")\n";
}

int modelRun(const ModelRunFlags& flags) {
  const std::string text = readModelText(flags.text);
  auto model = std::make_shared<const Model>(loadModel(flags.model));
  checkOutDir(flags.out);
  ModelRunner runner(model);
  const ModelRun& run = runner.run(text);
  writeOutputFiles(flags.out, "model",
                   {{"attentions.npy", [&](const std::string& p) { writeNpy(p, stackAttentions(run)); }},
                    {"logits.npy", [&](const std::string& p) { writeNpy(p, run.logits); }},
                    {"tokens.txt", [&](const std::string& p) { writeFileAtomic(p, tokensText(run.tokens)); }}});
  printSummary(*model, run, flags.out);
  return 0;
}

}  // namespace

int runModelCommand(int argc, char** argv) {
  CLI::App app{"Run a trained transformer (a model folder in the attnscope-model/1 format) on a text.",
               "attnscope model"};
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "run MODEL on a text: writes attentions.npy [n_layers, 1, H, L, L], "
                                            "logits.npy [L, V] and tokens.txt, prints the top-5 next tokens");
  ModelRunFlags flags;
  run->add_option("MODEL", flags.model, "model folder: config.json, vocab.json, one .npy per tensor")->required();
  addModelTextOptions(*run, flags.text);
  run->add_option("--out", flags.out, "output folder (created if missing)")->required();
  run->footer(
      "Text longer than the model's context (max_len) is refused; characters outside the vocabulary\n"
      "become the unknown id (marked 'unknown' in tokens.txt). Exit status: 0 ok, 1 bad input (one\n"
      "line on stderr naming the file), 2 usage error.\n"
      "Example: attnscope model run assets/models/python-code --text 'def f(x):' --out result");
  return runCommand(app, argc, argv, [&] {
    if (!flags.text.given()) throw UsageError("run: give --text TEXT or --text-file FILE");
    return modelRun(flags);
  });
}

}  // namespace attnscope
