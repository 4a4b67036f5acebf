// `attnscope compute`: runs the attention core on a tensor bundle (or the built-in text
// demo) and writes every stage as .npy files plus shapes.json.
//
// Precedence: command-line flags > bundle.json > defaults. Everything is computed before
// the first file is written; files go to a hidden staging folder inside --out and are
// renamed into place only when all of them were written, so a failed run leaves nothing.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "config/bundle.h"
#include "cli/commands.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "tensor/npy.h"
#include "config/settings.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// Far above any real model; keeps heads * head_dim (the default D) from overflowing.
constexpr int64_t kMaxHeads = 1 << 20;

struct ComputeFlags {
  std::string bundle;
  bool demo = false;
  std::string out;
  std::optional<int64_t> heads;
  std::optional<std::string> mask;
  std::optional<std::string> fill;
  std::optional<std::string> scale;
  std::optional<float> dropout;
  std::optional<uint64_t> seed;
  std::optional<std::string> valid_lens;
  std::optional<std::string> mistake;
};

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

std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
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

void applyFlags(const ComputeFlags& flags, AttentionOptions& options) {
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

nlohmann::ordered_json shapesJson(const AttentionTrace& t, const AttentionOptions& options, const std::string& source,
                          const std::vector<std::string>& files) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const Stage& s : t.stages)
    stages.push_back({{"name", s.name}, {"op", s.op}, {"shape", s.shape}, {"code", s.code}});
  std::vector<std::string> components;
  for (const MaskComponent& c : t.mask.components) components.push_back(c.name);
  int64_t fully_masked = 0;
  for (uint8_t f : t.fully_masked.data) fully_masked += f;
  const int64_t BH = t.B * t.H;
  return {
      {"source", source},
      {"sizes", {{"B", t.B}, {"L", t.L}, {"S", t.S}, {"D", t.D}, {"H", t.H}, {"d", t.d},
                 {"Dq", t.Dq}, {"Dk", t.Dk}, {"Dv", t.Dv}}},
      {"scale", t.scale},
      {"mask", options.mask.toString()},
      {"mask_components", components},
      {"fill", t.fill == MaskFill::NegInf ? "-inf" : "-1e9"},
      {"dropout", options.train ? options.dropout : 0.0f},
      {"dropout_applied", t.dropout_applied},
      {"fully_masked_rows", fully_masked},
      {"mistake", mistakeName(t.mistake)},
      {"mistake_note", t.mistake_note},
      {"stages", stages},
      // Seed 004's transpose_qkv / transpose_output view of the same numbers.
      {"folded_layout", {{"q", Shape{BH, t.L, t.d}}, {"k", Shape{BH, t.S, t.d}}, {"v", Shape{BH, t.S, t.d}},
                         {"valid_lens", Shape{BH}}, {"context", Shape{BH, t.L, t.d}},
                         {"output_concat", Shape{t.B, t.L, t.D}}}},
      {"query_tokens", t.query_tokens},
      {"key_tokens", t.key_tokens},
      {"files", files},
  };
}

// Writes every output into a staging folder, then renames them into `out`.
std::vector<std::string> writeOutputs(const AttentionTrace& t, const AttentionOptions& options,
                                      const std::string& source, const std::string& out) {
  std::vector<OutputFile> outputs = {
      {"scores.npy", [&](const std::string& p) { writeNpy(p, t.scores); }},
      {"probs.npy", [&](const std::string& p) { writeNpy(p, t.probs); }},
      {"output.npy", [&](const std::string& p) { writeNpy(p, t.output); }},
      {"q.npy", [&](const std::string& p) { writeNpy(p, t.q); }},
      {"k.npy", [&](const std::string& p) { writeNpy(p, t.k); }},
      {"v.npy", [&](const std::string& p) { writeNpy(p, t.v); }},
      {"context.npy", [&](const std::string& p) { writeNpy(p, t.context); }},
      {"mask.npy", [&](const std::string& p) { writeNpy(p, t.mask.allowed); }},
      {"fully_masked.npy", [&](const std::string& p) { writeNpy(p, t.fully_masked); }},
  };
  if (t.dropout_applied)
    outputs.insert(outputs.begin() + 2, {"probs_dropped.npy", [&](const std::string& p) { writeNpy(p, t.probs_dropped); }});
  std::vector<std::string> files;
  for (const OutputFile& f : outputs) files.push_back(f.first);
  files.push_back("shapes.json");
  outputs.push_back({"shapes.json", [&](const std::string& p) {
                       writeFileAtomic(p, shapesJson(t, options, source, files).dump(2) + "\n");
                     }});
  writeOutputFiles(out, "compute", outputs);
  // A probs_dropped.npy from an earlier run with dropout would not match these probs.
  std::error_code ec;
  if (!t.dropout_applied) fs::remove(fs::path(out) / "probs_dropped.npy", ec);
  return files;
}

std::string scaleText(const AttentionTrace& t, const AttentionOptions& options) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", t.scale);
  switch (options.scale_mode) {
    case ScaleMode::InvSqrtD: return std::string(buf) + " (1/sqrt(d))";
    case ScaleMode::None: return "1 (no scaling)";
    case ScaleMode::Custom: return std::string(buf) + " (custom)";
  }
  return buf;
}

void printSummary(const AttentionTrace& t, const AttentionOptions& options, const std::string& source,
                  const std::string& out, const std::vector<std::string>& files,
                  const std::vector<std::string>& notes) {
  std::cout << "attnscope compute: " << source << "\n";
  std::cout << "  sizes   B=" << t.B << " L=" << t.L << " S=" << t.S << " D=" << t.D << " H=" << t.H
            << " d=" << t.d << "  (Dq=" << t.Dq << " Dk=" << t.Dk << " Dv=" << t.Dv << ")\n";
  std::cout << "  scale   " << scaleText(t, options) << "\n";
  std::string components;
  for (const MaskComponent& c : t.mask.components) components += (components.empty() ? "" : " + ") + c.name;
  std::cout << "  mask    " << (components.empty() ? "none" : components)
            << "   fill " << (t.fill == MaskFill::NegInf ? "-inf" : "-1e9") << "\n";
  std::cout << "  dropout " << (t.dropout_applied ? "p=" + formatNumber(options.dropout) + " (train, seed " +
                                                       std::to_string(options.seed) + ")"
                                                 : std::string("off"))
            << "\n";
  if (t.mistake != Mistake::None)
    std::cout << "  mistake " << mistakeName(t.mistake) << " (on purpose): " << t.mistake_note << "\n";
  std::cout << "  stages\n";
  size_t name_width = 0, op_width = 0;
  for (const Stage& s : t.stages) {
    name_width = std::max(name_width, s.name.size() + 2);
    op_width = std::max(op_width, s.op.size() + 2);
  }
  for (const Stage& s : t.stages) {
    std::string name = s.name, op = s.op;
    name.resize(name_width, ' ');
    op.resize(op_width, ' ');
    std::cout << "    " << name << op << shapeToString(s.shape) << "\n";
  }
  std::cout << "  wrote " << files.size() << " files to " << out << ":";
  for (const std::string& f : files) std::cout << " " << f;
  std::cout << "\n";
  for (const std::string& n : notes) std::cout << "  note: " << n << "\n";
  int64_t fully_masked = 0;
  for (uint8_t f : t.fully_masked.data) fully_masked += f;
  if (fully_masked > 0)
    std::cout << "  warning: " << fully_masked << " query row" << (fully_masked == 1 ? " is" : "s are")
              << " fully masked: "
              << (t.fill == MaskFill::NegInf ? "probabilities set to 0 (PyTorch gives NaN)"
                                             : "the -1e9 fill gives a uniform row over the masked keys")
              << " (see fully_masked.npy)\n";
}

int compute(const ComputeFlags& flags) {
  std::vector<std::string> notes;
  AttentionInputs inputs;
  AttentionOptions options;
  std::string source;
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
  checkOutDir(flags.out);

  const AttentionTrace trace = runAttention(inputs, options);
  const std::vector<std::string> files = writeOutputs(trace, options, source, flags.out);
  printSummary(trace, options, source, flags.out, files, notes);
  return 0;
}

}  // namespace

int runComputeCommand(int argc, char** argv) {
  CLI::App app{"Compute multi-head attention on a tensor bundle (a folder of .npy files) or the built-in "
               "demo, and write every stage as .npy plus shapes.json.",
               "attnscope compute"};
  ComputeFlags flags;
  app.add_option("BUNDLE", flags.bundle, "bundle folder: query.npy [B,L,Dq], optional key/value/weights/masks");
  app.add_flag("--demo", flags.demo, "use the built-in text demo instead of a bundle");
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
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
  app.footer(
      "Flags override bundle.json (heads, mask, scale, fill, dropout, seed, d_model), which overrides the\n"
      "defaults (H = 1 for a bundle, 4 for the demo). The bundle's attn_mask.npy and key_padding.npy are\n"
      "always applied. Writes scores/probs/output/q/k/v/context/mask/fully_masked .npy and shapes.json.\n"
      "Exit status: 0 ok, 1 bad input (one line on stderr naming the file), 2 usage error.\n"
      "Example: attnscope compute my_bundle --out result --heads 5 --mask causal+padding --valid-lens 3,2");

  // Usage errors in the flags are found before the bundle is read.
  const auto checkFlagsAndCompute = [&] {
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
    return compute(flags);
  };
  // Input problems are InputErrors; any other exception here is a bug, named as one.
  return runCommand(app, argc, argv, checkFlagsAndCompute, "internal error: ");
}

}  // namespace attnscope
