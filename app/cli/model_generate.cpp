// `attnscope model generate`: see model_generate.h and docs/generation-and-lens.md, "attnscope model generate".
// Flags are checked before any file is read (exit 2), the prompt against the context before
// the output folder is touched (exit 1); the files are written staged, as `model run` does.
#include "cli/model_generate.h"

#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "model/folder_runner.h"
#include "model/generate.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

SamplingSettings samplingOf(const GenerateFlags& f) {
  if (f.tokens < 1) throw UsageError("generate: --tokens must be at least 1, got " + std::to_string(f.tokens));
  const bool sampling = f.temperature || f.top_k || f.top_p || f.seed;
  if (f.greedy && sampling) throw UsageError("generate: --greedy takes no --temperature, --top-k, --top-p or --seed");
  SamplingSettings s;
  s.greedy = !sampling;
  if (f.temperature && !(*f.temperature > 0.0))
    throw UsageError("generate: --temperature must be > 0 (use --greedy for the most likely token), got " +
                     std::to_string(*f.temperature));
  if (f.top_p && !(*f.top_p > 0.0 && *f.top_p <= 1.0))
    throw UsageError("generate: --top-p must be in (0, 1], got " + std::to_string(*f.top_p));
  if (f.top_k && *f.top_k < 0) throw UsageError("generate: --top-k must be >= 0 (0 = all), got " + std::to_string(*f.top_k));
  s.temperature = f.temperature.value_or(1.0);
  s.top_p = f.top_p.value_or(1.0);
  s.top_k = f.top_k.value_or(0);
  s.seed = f.seed.value_or(0);
  return s;
}

// --window W --sinks K: the stepper's causal-window:W + sinks:K on every layer (usage errors: exit 2).
CacheWindow cacheWindowOf(const GenerateFlags& f) {
  if (f.sinks && !f.window) throw UsageError("generate: --sinks needs --window (the sinks stay visible beside the window)");
  if (f.window && *f.window < 0) throw UsageError("generate: --window must be >= 0, got " + std::to_string(*f.window));
  if (f.sinks && *f.sinks < 0) throw UsageError("generate: --sinks must be >= 0, got " + std::to_string(*f.sinks));
  CacheWindow cache;
  if (f.window) cache.window = *f.window;
  cache.sinks = f.sinks.value_or(0);
  return cache;
}

}  // namespace

// The runner lives as long as the functions that hold it (causalModel keeps a reference).
Loaded loadCausalModel(const std::string& folder) {
  auto runner = std::make_shared<FolderModelRunner>(folder);
  const Model& model = runner->model();
  Loaded p;
  p.model = runner->causalModel();
  p.model.run = [runner, run = p.model.run](const ModelTokens& tokens) -> const ModelRun& { return run(tokens); };
  p.model.step = [runner, step = p.model.step](const ModelTokens& tokens) -> const ModelRun& { return step(tokens); };
  p.reset = [runner] { runner->reset(); };
  p.set_window = [runner](const CacheWindow& cache) { runner->setCacheWindow(cache); };
  p.set_interventions = [runner](const Interventions& in) { runner->setInterventions(in); };
  p.logit_rows = [runner](const LogitRows& rows) { runner->logitRows(rows); };
  p.keep_scores = [runner](bool keep) { runner->keepScores(keep); };
  p.lens = [runner](const ModelTokens& tokens) { return runner->lens(tokens); };
  p.patch = [runner](const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer, int64_t wrong) {
    return runner->patch(clean, corrupt, answer, wrong);
  };
  p.n_layers = model.config.n_layers, p.heads = model.config.heads;
  p.sweep = [runner](const ModelTokens& tokens, AblationMode mode) { return runner->sweep(tokens, -1, mode); };
  p.name = model.name() + " (" + model.config.model_type + ")";
  p.vocab = model.config.vocab;
  p.text = [runner](int64_t id) { return runner->tokenText(id); };
  p.encode = [runner](const std::string& text, Truncate truncate, int64_t room) { return runner->tokenize(text, truncate, room); };
  p.from_ids = [runner](const std::vector<int64_t>& ids) { return runner->tokensFromIds(ids); };
  return p;
}


void addGenerateOptions(CLI::App& app, GenerateFlags& flags) {
  app.add_option("MODEL", flags.model, "model folder (attnscope-model/1 or a causal Hugging Face folder)")->required();
  addModelTextOptions(app, flags.text);
  app.add_option("--ids", flags.ids, "the prompt as token ids separated by commas");
  app.add_option("--tokens", flags.tokens, "how many tokens to generate (at most; EOS and the context stop earlier)")
      ->required();
  app.add_flag("--greedy", flags.greedy, "always the most likely token (the default)");
  app.add_option("--temperature", flags.temperature, "sample from softmax(logits / T), T > 0");
  app.add_option("--top-k", flags.top_k, "sample among the K most likely tokens (0 = all)");
  app.add_option("--top-p", flags.top_p, "sample among the most likely tokens whose mass reaches P, in (0, 1]");
  app.add_option("--seed", flags.seed, "seed of the sampler (std::mt19937_64; default 0): same seed, same tokens");
  app.add_flag("--lens", flags.lens,
               "logit lens over the final sequence: also write lens_ids.npy (int64) and lens_probs.npy (float32), "
               "[n_layers + 1, L, 5]");
  app.add_option("--window", flags.window,
                 "KV cache with a causal window: each row sees itself and the W keys before it (the stepper's "
                 "causal-window:W); evicted keys leave the cache");
  app.add_option("--sinks", flags.sinks, "with --window: the first K positions stay in the cache (attention sinks)");
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
  addInterventionOptions(app, flags.interventions);
  app.footer(
      "Sampling: temperature, then top-k, then top-p, then one draw (docs/generation-and-lens.md). Exit status: 0 ok, 1 bad\n"
      "input (a prompt already at the context, a bad folder), 2 usage error; nothing is written on error.\n"
      "Example: attnscope model generate assets/models/python-code --text 'def ' --tokens 20 --out gen");
}

int modelGenerate(const GenerateFlags& flags) {
  if (!flags.text.given() && flags.ids.empty()) throw UsageError("generate: give --text TEXT, --text-file FILE or --ids IDS");
  if (flags.text.given() && !flags.ids.empty()) throw UsageError("generate: give either a text or --ids, not both");
  const Truncate truncate = truncateOf(flags.text.truncate, flags.text.given());
  const SamplingSettings sampling = samplingOf(flags);
  const CacheWindow cache = cacheWindowOf(flags);
  const Interventions interventions = flags.interventions.parsed();
  Loaded p = loadCausalModel(flags.model);
  p.logit_rows(kGenerationLogits);
  p.keep_scores(false);  // attentions.npy holds probabilities
  p.set_window(cache);
  p.set_interventions(interventions);
  const ModelTokens prompt = flags.ids.empty() ? p.encode(readModelText(flags.text), truncate, flags.tokens) : p.from_ids(parseIds(flags.ids));
  const int64_t P = static_cast<int64_t>(prompt.ids.size());
  if (P >= p.model.context)
    throw InputError("the prompt has " + std::to_string(P) + " tokens and " + p.name + "'s context is " +
                     std::to_string(p.model.context) + ": no room to generate");
  checkOutDir(flags.out);
  std::cout << "attnscope model generate: " << p.name << "\n";
  if (!interventions.empty()) std::cout << "  intervened  " << interventions.describe() << "\n";
  if (cache.on())
    std::cout << "  cache: " << cache.sinks << " sinks + window " << cache.window << " (" << cache.sinks + cache.window
              << " entries per layer kept between steps)\n";
  for (int64_t id : prompt.ids) std::cout << p.text(id);
  std::cout << std::flush;
  std::string generated;
  const Generation g = generate(p.model, prompt, flags.tokens, sampling, [&](const GenerationStep& step) {
    const std::string text = p.text(step.id);
    generated += text;
    std::cout << text << std::flush;
  });
  std::cout << "\n  " << g.steps.size() << " tokens (stopped at " << (g.stop == "tokens" ? "--tokens" : g.stop) << ")\n";
  const LogitLens lens = flags.lens ? p.lens(g.run.tokens) : LogitLens();
  std::vector<OutputFile> files = {
      {"generated.txt", [&](const std::string& path) { writeFileAtomic(path, generated); }},
      {"tokens.txt", [&](const std::string& path) { writeFileAtomic(path, tokensText(g.run.tokens, P)); }},
      {"attentions.npy", [&](const std::string& path) { writeNpy(path, g.attentions); }},
      {"steps.json", [&](const std::string& path) { writeFileAtomic(path, stepsJson(g.steps).dump(1) + "\n"); }}};
  addLensFiles(lens, files);
  writeOutputFiles(flags.out, "model", files);
  std::cout << "  wrote   generated.txt, tokens.txt, attentions.npy " << shapeToString(g.attentions.shape)
            << ", steps.json" << (lens.empty() ? "" : ", lens_ids.npy, lens_probs.npy") << " to " << flags.out << "\n";
  return 0;
}

}  // namespace attnscope
