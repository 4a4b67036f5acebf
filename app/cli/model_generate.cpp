// `attnscope model generate`: see model_generate.h and README, "attnscope model generate".
// Flags are checked before any file is read (exit 2), the prompt against the context before
// the output folder is touched (exit 1); the files are written staged, as `model run` does.
#include "cli/model_generate.h"

#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "model/generate.h"
#include "model/hf_model.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"
#include "tokenizer/tokenizer.h"

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

// A token's text as typed: labels turn the marks back into a space, newline and tab.
std::string hfTokenText(const HfModel& model, int64_t id) {
  if (!model.tokenizer) return "#" + std::to_string(id);
  std::string text = model.tokenizer->label(id);
  for (auto [mark, plain] : {std::pair{kSpaceMark, " "}, {kNewlineMark, "\n"}, {kTabMark, "\t"}})
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1))
      text.replace(at, std::string(mark).size(), plain);
  return text;
}

// config.json's eos_token_id (a number or a list), else the tokenizer's end-of-sequence token.
std::vector<int64_t> hfEos(const HfModel& model) {
  std::vector<int64_t> eos;
  const nlohmann::json config = nlohmann::json::parse(readSmallFile(model.config.config_path, 64u << 20, "config.json"),
                                                      nullptr, false);
  if (config.is_object() && config.contains("eos_token_id")) {
    const nlohmann::json& e = config["eos_token_id"];
    if (e.is_number_integer()) eos.push_back(e.get<int64_t>());
    if (e.is_array())
      for (const nlohmann::json& id : e)
        if (id.is_number_integer()) eos.push_back(id.get<int64_t>());
  }
  if (eos.empty() && model.tokenizer && model.tokenizer->eosId()) eos.push_back(*model.tokenizer->eosId());
  return eos;
}

Loaded loadHf(const std::string& folder) {
  auto hf = std::make_shared<const HfModel>(loadHfModel(folder));
  if (!hf->config.family->causal)
    throw InputError(folder + ": " + hf->config.model_type + " is an encoder: generation needs a causal model");
  if (hf->lm_head.empty()) throw InputError(folder + ": no language-model head to generate with");
  auto runner = std::make_shared<HfRunner>(hf);
  Loaded p;
  p.model.run = [runner](const ModelTokens& tokens) -> const ModelRun& { return runner->run(tokens); };
  p.model.append = [hf](ModelTokens& tokens, int64_t id) {
    const ModelTokens one = hfTokensFromIds(*hf, {id});
    tokens.ids.push_back(id);
    tokens.text.push_back(one.text[0]);
    tokens.label.push_back(one.label[0]);
    tokens.unknown.push_back(one.unknown[0]);
  };
  p.model.label = [hf](int64_t id) { return hfTokenLabel(*hf, id); };
  p.model.context = hf->context();
  p.model.eos = hfEos(*hf);
  p.name = hf->name() + " (" + hf->config.model_type + ")";
  p.vocab = hf->config.vocab;
  p.text = [hf](int64_t id) { return hfTokenText(*hf, id); };
  p.encode = [hf](const std::string& text) { return tokenizeHf(*hf, text); };
  p.from_ids = [hf](const std::vector<int64_t>& ids) { return hfTokensFromIds(*hf, ids); };
  p.reset = [runner] { runner->reset(); };
  p.lens = [runner](const ModelTokens& tokens) { return lensOfTokens(*runner, tokens); };
  return p;
}

Loaded loadOwn(const std::string& folder) {
  auto model = std::make_shared<const Model>(loadModel(folder));
  auto runner = std::make_shared<ModelRunner>(model);
  Loaded p;
  p.model.run = [runner](const ModelTokens& tokens) -> const ModelRun& { return runner->runTokens(tokens); };
  p.model.append = [model](ModelTokens& tokens, int64_t id) {
    tokens.ids.push_back(id);
    tokens.text.push_back(model->vocab.at(id));
    tokens.label.push_back(tokenLabel(*model, id));
    tokens.unknown.push_back(0);
  };
  p.model.label = [model](int64_t id) { return tokenLabel(*model, id); };
  p.model.context = model->config.max_len;
  p.name = model->config.name;
  p.vocab = model->config.vocab_size;
  p.text = [model](int64_t id) { return model->vocab.at(id); };
  p.encode = [model](const std::string& text) {
    ModelTokens tokens = tokenizeForModel(*model, text);
    if (tokens.ids.empty()) throw InputError("the prompt is empty: give at least one character");
    return tokens;
  };
  p.from_ids = [p](const std::vector<int64_t>& ids) {
    ModelTokens tokens;
    for (int64_t id : ids) p.model.append(tokens, id);
    return tokens;
  };
  p.reset = [runner] { runner->reset(); };
  p.lens = [runner](const ModelTokens& tokens) { return lensOfTokens(*runner, tokens); };
  return p;
}

nlohmann::json stepsJson(const Generation& g) {
  nlohmann::json steps = nlohmann::json::array();
  for (const GenerationStep& s : g.steps) {
    nlohmann::json top = nlohmann::json::array();
    for (const Prediction& p : s.top) top.push_back({p.id, p.label, p.prob});
    steps.push_back({{"position", s.position}, {"id", s.id}, {"token", s.token}, {"prob", s.prob},
                     {"rank", s.rank}, {"top", top}, {"ms", s.ms}});
  }
  return steps;
}

}  // namespace

Loaded loadCausalModel(const std::string& folder) { return isHfModelFolder(folder) ? loadHf(folder) : loadOwn(folder); }

void addGenerateOptions(CLI::App& app, GenerateFlags& flags) {
  app.add_option("MODEL", flags.model, "model folder (attnscope-model/1 or a causal Hugging Face folder)")->required();
  addModelTextOptions(app, flags.text);
  app.add_option("--ids", flags.ids, "Hugging Face folders: the prompt as token ids separated by commas");
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
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
  app.footer(
      "Sampling: temperature, then top-k, then top-p, then one draw (README). Exit status: 0 ok, 1 bad\n"
      "input (a prompt already at the context, a bad folder), 2 usage error; nothing is written on error.\n"
      "Example: attnscope model generate assets/models/python-code --text 'def ' --tokens 20 --out gen");
}

int modelGenerate(const GenerateFlags& flags) {
  if (!flags.text.given() && flags.ids.empty()) throw UsageError("generate: give --text TEXT, --text-file FILE or --ids IDS");
  if (flags.text.given() && !flags.ids.empty()) throw UsageError("generate: give either a text or --ids, not both");
  const SamplingSettings sampling = samplingOf(flags);
  const bool hf = isHfModelFolder(flags.model);
  if (!hf && !flags.ids.empty())
    throw UsageError("generate: --ids is for Hugging Face model folders; give --text or --text-file");
  Loaded p = loadCausalModel(flags.model);
  const ModelTokens prompt = flags.ids.empty() ? p.encode(readModelText(flags.text)) : p.from_ids(parseIds(flags.ids));
  const int64_t P = static_cast<int64_t>(prompt.ids.size());
  if (P >= p.model.context)
    throw InputError("the prompt has " + std::to_string(P) + " tokens and " + p.name + "'s context is " +
                     std::to_string(p.model.context) + ": no room to generate");
  checkOutDir(flags.out);
  std::cout << "attnscope model generate: " << p.name << "\n";
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
      {"steps.json", [&](const std::string& path) { writeFileAtomic(path, stepsJson(g).dump(1) + "\n"); }}};
  addLensFiles(lens, files);
  writeOutputFiles(flags.out, "model", files);
  std::cout << "  wrote   generated.txt, tokens.txt, attentions.npy " << shapeToString(g.attentions.shape)
            << ", steps.json" << (lens.empty() ? "" : ", lens_ids.npy, lens_probs.npy") << " to " << flags.out << "\n";
  return 0;
}

}  // namespace attnscope
