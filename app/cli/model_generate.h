// `attnscope model generate MODEL --text PROMPT --tokens N [--greedy | --temperature T
// --top-k K --top-p P --seed S] --out DIR`: generation through the runner's KV cache
// (model/generate.h); writes generated.txt, tokens.txt, attentions.npy and steps.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/run_options.h"
#include "config/generation_bundle.h"
#include "model/transformer.h"

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
  std::string out;
};

void addGenerateOptions(CLI::App& app, GenerateFlags& flags);
int modelGenerate(const GenerateFlags& flags);

// tokensText (tokens.txt) and stepsJson: config/generation_bundle.h.

// "1, 2,3" -> {1, 2, 3}; InputError for anything else.
std::vector<int64_t> parseIds(const std::string& text);

}  // namespace attnscope
