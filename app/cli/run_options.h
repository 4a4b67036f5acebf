// The run options that `compute` and `analyze` share: the source (BUNDLE or --demo) and
// the attention flags, turned into inputs + options with the precedence
// command-line flags > bundle.json > defaults. The variant flags (VariantFlags) are shared
// with `export` too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attention/attention.h"
#include "config/settings.h"
#include "model/interventions.h"

namespace attnscope {

// The attention-variant flags of `compute`, `export` and `analyze`:
//   --kv-heads G, --rope [BASE], --rope-style half|interleaved, --alibi, --softcap C,
//   --sinks K (with a window term in --mask, or in the bundle's / settings' mask).
struct VariantFlags {
  std::optional<int64_t> kv_heads;
  std::vector<std::string> rope;        // --rope given: [] or [""] (default base) or [BASE]
  CLI::Option* rope_option = nullptr;
  std::optional<std::string> rope_style;
  bool alibi = false;
  std::optional<float> softcap;
  std::optional<int64_t> sinks;
};
void addVariantFlags(CLI::App& app, VariantFlags& flags);
// UsageError (exit 2) for a flag that does not parse: G < 1, BASE <= 1, an unknown style,
// C <= 0, K < 0, --rope-style without --rope; and --sinks without a window term in
// `mask_text` when --mask is given (otherwise the mask from elsewhere is checked later).
void checkVariantFlags(const VariantFlags& flags, const std::optional<std::string>& mask_text);
// Flags given override what the settings hold (from bundle.json or a settings file);
// InputError when --sinks meets a mask without a window term.
void applyVariantFlags(const VariantFlags& flags, Settings& settings);
// True when any variant flag was given (after parsing).
bool anyVariantFlag(const VariantFlags& flags);

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
  VariantFlags variants;
};

// Registers BUNDLE, --demo, --heads, --mask, --mask-fill, --scale, --dropout, --seed,
// --valid-lens, --mistake and the variant flags on app, writing into flags.
void addRunOptions(CLI::App& app, RunFlags& flags);

// Usage errors in the flags (UsageError), found before any file is read.
void checkRunFlags(const RunFlags& flags);

struct ConfiguredRun {
  AttentionInputs inputs;
  AttentionOptions options;
  std::string source;               // "bundle DIR" or "built-in demo (...)"
  std::vector<std::string> notes;   // one line each, for the summary
  bool tiled = false;               // past the app's full-path budget (Run::tiled)
};

// Reads the bundle (or builds the demo), applies bundle.json then the flags, checks the
// sizes and the memory the trace needs. InputError naming the file and the problem.
ConfiguredRun configureRunFromFlags(const RunFlags& flags);

std::string formatNumber(double value);  // "%g"

// The text a trained MODEL runs on (`model run`, `model generate`, `export MODEL`): --text
// TEXT or --text-file FILE (taken as is), one of them, and --truncate start|end for a text
// longer than the context (docs/cli.md).
struct ModelTextFlags {
  std::optional<std::string> text;
  std::optional<std::string> text_file;
  std::optional<std::string> truncate;
  bool given() const { return text || text_file; }
};
void addModelTextOptions(CLI::App& app, ModelTextFlags& flags);
// --truncate's option alone (`analyze MODEL --text` has its own --text).
void addTruncateOption(CLI::App& app, std::optional<std::string>& truncate);
// The text; InputError naming the file when it cannot be read.
std::string readModelText(const ModelTextFlags& flags);
// --truncate as given (None without it); UsageError for another value, or without a text.
Truncate truncateOf(const std::optional<std::string>& truncate, bool text_given);
// --ablate SPEC and --knockout SPEC (model/interventions.h) of `model run`, `model generate`,
// `export MODEL` and `analyze MODEL`.
struct InterventionFlags {
  std::string ablate, knockout;
  bool given() const { return !ablate.empty() || !knockout.empty(); }
  Interventions parsed() const { return parseInterventions(ablate, knockout); }  // InputError naming the item
};
void addInterventionOptions(CLI::App& app, InterventionFlags& flags);

// "the text has more: --truncate end kept its first 64 tokens" (the commands' summaries).
std::string truncatedNote(Truncate truncate, int64_t kept, const char* unit);

}  // namespace attnscope
