// `attnscope compute`: runs the attention core on a tensor bundle (or the built-in text
// demo) and writes every stage as .npy files plus shapes.json.
//
// Run options: cli/run_options.h (flags > bundle.json > defaults). Everything is computed before
// the first file is written; files go to a hidden staging folder inside --out and are
// renamed into place only when all of them were written, so a failed run leaves nothing.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// The active variants with their settings (shapes.json "variants").
nlohmann::ordered_json variantsJson(const AttentionTrace& t, const AttentionOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (Variant v : t.variants) {
    nlohmann::ordered_json entry = {{"reference", variantInfo(v).reference}};
    switch (v) {
      case Variant::GroupedQuery: entry["kv_heads"] = t.G; break;
      case Variant::Rope:
        entry["base"] = options.rope_base;
        entry["style"] = ropeStyleName(options.rope_style);
        break;
      case Variant::Alibi: entry["slopes"] = t.alibi_slopes; break;
      case Variant::SoftCap: entry["cap"] = *options.softcap; break;
      case Variant::Sinks: entry["sinks"] = options.mask.sinks; break;
    }
    out[variantInfo(v).name] = entry;
  }
  return out;
}

std::string variantsText(const AttentionTrace& t, const AttentionOptions& options) {
  std::string text;
  for (Variant v : t.variants) {
    std::string item = variantInfo(v).name;
    switch (v) {
      case Variant::GroupedQuery: item += " G=" + std::to_string(t.G) + (t.G == 1 ? " (MQA)" : ""); break;
      case Variant::Rope:
        item += std::string(" ") + ropeStyleName(options.rope_style) + " base " + formatNumber(options.rope_base);
        break;
      case Variant::Alibi: break;
      case Variant::SoftCap: item += " " + formatNumber(*options.softcap); break;
      case Variant::Sinks: item += " " + std::to_string(options.mask.sinks); break;
    }
    text += (text.empty() ? "" : ", ") + item;
  }
  return text;
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
                 {"Dq", t.Dq}, {"Dk", t.Dk}, {"Dv", t.Dv}, {"G", t.G}}},
      {"scale", t.scale},
      {"variants", variantsJson(t, options)},
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
            << (t.G != t.H ? " G=" + std::to_string(t.G) : std::string()) << " d=" << t.d << "  (Dq=" << t.Dq
            << " Dk=" << t.Dk << " Dv=" << t.Dv << ")\n";
  std::cout << "  scale   " << scaleText(t, options) << "\n";
  if (!t.variants.empty()) std::cout << "  variant " << variantsText(t, options) << "\n";
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

struct ComputeFlags {
  RunFlags run;
  std::string out;
};

int compute(const ComputeFlags& flags) {
  const ConfiguredRun run = configureRunFromFlags(flags.run);
  const AttentionInputs& inputs = run.inputs;
  const AttentionOptions& options = run.options;
  checkOutDir(flags.out);

  const AttentionTrace trace = runAttention(inputs, options);
  const std::vector<std::string> files = writeOutputs(trace, options, run.source, flags.out);
  printSummary(trace, options, run.source, flags.out, files, run.notes);
  return 0;
}

}  // namespace

int runComputeCommand(int argc, char** argv) {
  CLI::App app{"Compute multi-head attention on a tensor bundle (a folder of .npy files) or the built-in "
               "demo, and write every stage as .npy plus shapes.json.",
               "attnscope compute"};
  ComputeFlags flags;
  addRunOptions(app, flags.run);
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
  app.footer(
      "Flags override bundle.json (heads, mask, scale, fill, dropout, seed, d_model, kv_heads, rope,\n"
      "rope_style, alibi, softcap, sinks), which overrides the\n"
      "defaults (H = 1 for a bundle, 4 for the demo). The bundle's attn_mask.npy and key_padding.npy are\n"
      "always applied. Writes scores/probs/output/q/k/v/context/mask/fully_masked .npy and shapes.json.\n"
      "Exit status: 0 ok, 1 bad input (one line on stderr naming the file), 2 usage error.\n"
      "Example: attnscope compute my_bundle --out result --heads 5 --mask causal+padding --valid-lens 3,2");

  // Usage errors in the flags are found before the bundle is read.
  const auto checkFlagsAndCompute = [&] {
    checkRunFlags(flags.run);
    return compute(flags);
  };
  // Input problems are InputErrors; any other exception here is a bug, named as one.
  return runCommand(app, argc, argv, checkFlagsAndCompute, "internal error: ");
}

}  // namespace attnscope
