// The run options that `compute` and `analyze` share: the source (BUNDLE or --demo) and
// the attention flags, turned into inputs + options with the precedence
// command-line flags > bundle.json > defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attention/attention.h"

namespace attnscope {

struct RunFlags {
  std::string bundle;
  bool demo = false;
  std::optional<int64_t> heads;
  std::optional<std::string> mask;
  std::optional<std::string> fill;
  std::optional<std::string> scale;
  std::optional<float> dropout;
  std::optional<uint64_t> seed;
  std::optional<std::string> valid_lens;
  std::optional<std::string> mistake;
};

// Registers BUNDLE, --demo, --heads, --mask, --mask-fill, --scale, --dropout, --seed,
// --valid-lens and --mistake on app, writing into flags.
void addRunOptions(CLI::App& app, RunFlags& flags);

// Usage errors in the flags (UsageError), found before any file is read.
void checkRunFlags(const RunFlags& flags);

struct ConfiguredRun {
  AttentionInputs inputs;
  AttentionOptions options;
  std::string source;               // "bundle DIR" or "built-in demo (...)"
  std::vector<std::string> notes;   // one line each, for the summary
};

// Reads the bundle (or builds the demo), applies bundle.json then the flags, checks the
// sizes and the memory the trace needs. InputError naming the file and the problem.
ConfiguredRun configureRunFromFlags(const RunFlags& flags);

std::string formatNumber(double value);  // "%g"

}  // namespace attnscope
