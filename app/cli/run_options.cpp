#include "cli/run_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/run_command.h"
#include "config/bundle.h"
#include "config/settings.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// Far above any real model; keeps heads * head_dim (the default D) from overflowing.
constexpr int64_t kMaxHeads = 1 << 20;


// "inf", "-inf", "1e9", "-1e9" (the sign is implied: masked scores go down).
std::optional<MaskFill> parseFill(const std::string& text) {
  if (text == "inf" || text == "-inf") return MaskFill::NegInf;
  if (text == "1e9" || text == "-1e9") return MaskFill::NegBillion;
  return std::nullopt;
}

// "none" = no scaling, "default" = 1/sqrt(d), or a finite positive factor for Q K^T.
std::optional<std::pair<ScaleMode, float>> parseScale(const std::string& text) {
  if (text == "none") return std::make_pair(ScaleMode::None, 1.0f);
  if (text == "default" || text == "sqrt") return std::make_pair(ScaleMode::InvSqrtD, 1.0f);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0.0) return std::nullopt;
  return std::make_pair(ScaleMode::Custom, static_cast<float>(value));
}

std::vector<int64_t> parseValidLens(const std::string& text) {
  std::vector<int64_t> lens;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0)
      throw UsageError("--valid-lens: '" + text + "' is not a comma-separated list of non-negative integers");
    lens.push_back(v);
  }
  if (lens.empty()) throw UsageError("--valid-lens: empty list");
  return lens;
}

// MaskSpec::parse's message without its own "mask: " prefix, for re-labelling.
std::string maskProblem(const InputError& e) {
  std::string why = e.what();
  return why.rfind("mask: ", 0) == 0 ? why.substr(6) : why;
}

MaskSpec parseMaskFlag(const std::string& text) {
  try {
    return MaskSpec::parse(text);
  } catch (const InputError& e) {
    throw UsageError("--mask: " + maskProblem(e));
  }
}


// Applies bundle.json's heads/mask/scale/fill/dropout/seed to the options. Wrong types
// are bad input naming bundle.json and the key.
void applyMeta(const nlohmann::json& meta, const std::string& json_path, AttentionOptions& options) {
  auto bad = [&](const std::string& key, const std::string& why) {
    throw InputError(json_path + ": \"" + key + "\" " + why);
  };
  if (meta.contains("heads")) {
    if (!meta["heads"].is_number_integer() || meta["heads"].get<int64_t>() < 1 || meta["heads"].get<int64_t>() > kMaxHeads)
      bad("heads", "must be an integer in 1.." + std::to_string(kMaxHeads));
    options.heads = meta["heads"].get<int64_t>();
  }
  if (meta.contains("mask")) {
    if (!meta["mask"].is_string()) bad("mask", "must be a string such as \"causal+padding\"");
    try {
      options.mask = MaskSpec::parse(meta["mask"].get<std::string>());
    } catch (const InputError& e) {
      bad("mask", "is invalid: " + maskProblem(e));
    }
  }
  if (meta.contains("scale")) {
    const auto& s = meta["scale"];
    std::optional<std::pair<ScaleMode, float>> scale;
    if (s.is_string()) scale = parseScale(s.get<std::string>());
    else if (s.is_number() && std::isfinite(s.get<double>()) && s.get<double>() > 0)
      scale = std::make_pair(ScaleMode::Custom, s.get<float>());
    if (!scale) bad("scale", "must be \"none\", \"default\" or a positive number");
    options.scale_mode = scale->first;
    options.custom_scale = scale->second;
  }
  if (meta.contains("fill")) {
    const auto& f = meta["fill"];
    std::optional<MaskFill> fill;
    if (f.is_string()) fill = parseFill(f.get<std::string>());
    else if (f.is_number() && std::fabs(f.get<double>()) == 1e9) fill = MaskFill::NegBillion;
    if (!fill) bad("fill", "must be \"inf\" or \"1e9\"");
    options.fill = *fill;
  }
  if (meta.contains("dropout")) {
    const auto& p = meta["dropout"];
    if (!p.is_number() || p.get<double>() < 0 || p.get<double>() >= 1) bad("dropout", "must be a number in [0, 1)");
    options.dropout = p.get<float>();
    options.train = options.dropout > 0;
  }
  if (meta.contains("seed")) {
    if (!meta["seed"].is_number_unsigned()) bad("seed", "must be a non-negative integer");
    options.seed = meta["seed"].get<uint64_t>();
  }
}

void applyFlags(const RunFlags& flags, AttentionOptions& options) {
  if (flags.heads) options.heads = *flags.heads;
  if (flags.mask) options.mask = parseMaskFlag(*flags.mask);
  if (flags.fill) options.fill = *parseFill(*flags.fill);
  if (flags.scale) {
    const auto scale = *parseScale(*flags.scale);
    options.scale_mode = scale.first;
    options.custom_scale = scale.second;
  }
  if (flags.dropout) {
    options.dropout = *flags.dropout;
    options.train = options.dropout > 0;
  }
  if (flags.seed) options.seed = *flags.seed;
  if (flags.mistake) options.mistake = mistakeFromName(*flags.mistake);
}

}  // namespace

std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void addRunOptions(CLI::App& app, RunFlags& flags) {
  app.add_option("BUNDLE", flags.bundle, "bundle folder: query.npy [B,L,Dq], optional key/value/weights/masks");
  app.add_flag("--demo", flags.demo, "use the built-in text demo instead of a bundle");
  app.add_option("--heads", flags.heads, "number of heads H (must divide D)");
  app.add_option("--mask", flags.mask,
                 "none, or terms joined by '+': causal, causal-br, window:W, causal-window:W, prefix:P, "
                 "segments:n1,n2,..., padding");
  app.add_option("--mask-fill", flags.fill, "value for masked scores: inf (default, -inf) or 1e9 (-1e9)");
  app.add_option("--scale", flags.scale, "factor for Q K^T: a positive number, none, or default (1/sqrt(d))");
  app.add_option("--dropout", flags.dropout, "dropout p on probabilities in [0, 1) (train mode)");
  app.add_option("--seed", flags.seed, "seed for dropout and default weights");
  app.add_option("--valid-lens", flags.valid_lens, "per-batch valid key lengths, e.g. 3,2 (implies padding)");
  std::string mistake_names;
  for (Mistake m : allMistakes()) mistake_names += (mistake_names.empty() ? "" : ", ") + std::string(mistakeName(m));
  app.add_option("--mistake", flags.mistake, "run attention wrong on purpose (mistakes lab): " + mistake_names);
}

void checkRunFlags(const RunFlags& flags) {
  if (flags.demo == !flags.bundle.empty())
    throw UsageError(flags.demo ? "give either BUNDLE or --demo, not both" : "give a BUNDLE folder or --demo");
  if (flags.fill && !parseFill(*flags.fill))
    throw UsageError("--mask-fill: '" + *flags.fill + "' is not one of inf, 1e9");
  if (flags.scale && !parseScale(*flags.scale))
    throw UsageError("--scale: '" + *flags.scale + "' is not a positive number, none or default");
  if (flags.dropout && !(*flags.dropout >= 0.0f && *flags.dropout < 1.0f))
    throw UsageError("--dropout: p must be in [0, 1), got " + formatNumber(*flags.dropout));
  if (flags.heads && (*flags.heads < 1 || *flags.heads > kMaxHeads))
    throw UsageError("--heads: H must be in 1.." + std::to_string(kMaxHeads) + ", got " + std::to_string(*flags.heads));
  if (flags.mask) parseMaskFlag(*flags.mask);
  if (flags.valid_lens) parseValidLens(*flags.valid_lens);
  if (flags.mistake) {
    try {
      mistakeFromName(*flags.mistake);
    } catch (const InputError& e) {
      throw UsageError(std::string("--mistake: ") + e.what());
    }
  }
}

ConfiguredRun configureRunFromFlags(const RunFlags& flags) {
  ConfiguredRun run;
  std::vector<std::string>& notes = run.notes;
  AttentionInputs& inputs = run.inputs;
  AttentionOptions& options = run.options;
  std::string& source = run.source;
  std::string heads_origin = "--heads";

  if (flags.demo) {
    Settings settings;
    if (flags.heads) settings.heads = *flags.heads;
    if (flags.seed) settings.seed = *flags.seed;
    inputs = buildInputs(settings);
    options = attentionOptions(settings);
    source = "built-in demo (\"" + settings.text + "\")";
  } else {
    const nlohmann::json meta = readBundleMeta(flags.bundle);
    const std::string json_path = (fs::path(flags.bundle) / "bundle.json").string();
    options.heads = 1;
    applyMeta(meta, json_path, options);
    if (!flags.heads && meta.contains("heads")) heads_origin = json_path + ": \"heads\"";
    const int64_t heads = flags.heads ? *flags.heads : options.heads;
    const uint64_t seed = flags.seed ? *flags.seed : options.seed;
    const Settings defaults;  // no weights in the bundle: D = H * the default head size
    Bundle bundle = loadBundle(flags.bundle, heads * defaults.head_dim, seed);
    inputs = std::move(bundle.inputs);
    source = "bundle " + flags.bundle;
    if (!bundle.has_weights)
      notes.push_back("no w_q/w_k/w_v/w_o.npy: seeded default weights (seed " + std::to_string(seed) + ", D=" +
                      std::to_string(inputs.w_q.dim(0)) + ")");
    if (meta.contains("notes") && meta["notes"].is_string()) notes.push_back(meta["notes"].get<std::string>());
  }
  applyFlags(flags, options);

  const int64_t B = inputs.query.dim(0), L = inputs.query.dim(1), S = inputs.key.dim(1);
  const int64_t D = inputs.w_q.dim(0);
  if (D % options.heads != 0)
    throw InputError(heads_origin + " " + std::to_string(options.heads) + " does not divide the model size D=" +
                     std::to_string(D) + " (D % H must be 0)");

  if (flags.valid_lens) {
    inputs.valid_lens = parseValidLens(*flags.valid_lens);
    if (static_cast<int64_t>(inputs.valid_lens.size()) != B)
      throw InputError("--valid-lens: " + std::to_string(inputs.valid_lens.size()) + " values but the batch has B=" +
                       std::to_string(B));
    for (int64_t len : inputs.valid_lens)
      if (len > S)
        throw InputError("--valid-lens: length " + std::to_string(len) + " exceeds the key length S=" +
                         std::to_string(S));
    if (!options.mask.padding) {
      options.mask.padding = true;
      notes.push_back("--valid-lens given: added 'padding' to the mask");
    }
  } else if (!inputs.valid_lens.empty() && !options.mask.padding) {
    notes.push_back("valid_lens.npy is not applied: add 'padding' to --mask to use it");
  }
  if (options.mask.padding && inputs.valid_lens.empty() && inputs.key_padding.empty())
    throw InputError("--mask padding: no valid lengths (give valid_lens.npy or key_padding.npy in the bundle, or --valid-lens)");

  // Refuse before runAttention allocates the [B, L, S] masks and [B, H, L, S] scores.
  try {
    checkMemory(estimateTraceBytes(B, L, S, D, inputs.query.dim(2), inputs.key.dim(2), inputs.value.dim(2),
                                   options.heads));
  } catch (const InputError& e) {
    throw InputError((flags.demo ? std::string("demo") : flags.bundle + "/query.npy") + " (B=" +
                     std::to_string(B) + ", L=" + std::to_string(L) + ", S=" + std::to_string(S) +
                     ", H=" + std::to_string(options.heads) + "): " + e.what());
  }
  return run;
}

}  // namespace attnscope
