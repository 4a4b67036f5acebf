// `attnscope diff MODEL_A MODEL_B (--text T | --ids I) --out D [--json]`: quantization drift
// between two files of one model (analysis/drift.h) on the same ids. Both models are loaded
// and their shapes and tokenizations checked before the output folder is touched; the files
// are written staged, as `model run` does.
#include <algorithm>
#include <functional>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/drift.h"
#include "attention/tiles.h"
#include "cli/commands.h"
#include "cli/model_generate.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "model/folder_runner.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

struct DiffFlags {
  std::string model_a, model_b;
  ModelTextFlags text;
  std::string ids;
  std::string out;
  bool json = false;
};

// "layers 2, heads 4, ..." of what must agree for two maps to be compared cell by cell.
std::string shapeText(const ModelConfig& c) {
  return c.model_type + ": " + std::to_string(c.n_layers) + " layers, " + std::to_string(c.heads) + " heads (" +
         std::to_string(c.kv_heads) + " K/V), head size " + std::to_string(c.head_dim) + ", width " +
         std::to_string(c.hidden) + ", vocabulary " + std::to_string(c.vocab);
}

void checkSameShape(const Model& a, const Model& b) {
  const std::string sa = shapeText(a.config), sb = shapeText(b.config);
  if (sa != sb)
    throw InputError(a.folder + " and " + b.folder + " are not two files of one model: " + sa + " vs " + sb);
}

// The ids both models read: the text through each tokenizer (InputError where they differ), or --ids.
ModelTokens sameTokens(const FolderModelRunner& a, const FolderModelRunner& b, const DiffFlags& flags) {
  if (!flags.ids.empty()) {
    const std::vector<int64_t> ids = parseIds(flags.ids);
    b.tokensFromIds(ids);  // InputError for an id outside B's vocabulary
    return a.tokensFromIds(ids);
  }
  const std::string text = readModelText(flags.text);
  const Truncate truncate = truncateOf(flags.text.truncate, true);
  ModelTokens ta = tokensForRun(a.model(), text, truncate);
  const ModelTokens tb = tokensForRun(b.model(), text, truncate);
  const size_t n = std::min(ta.ids.size(), tb.ids.size());
  size_t at = 0;
  while (at < n && ta.ids[at] == tb.ids[at]) ++at;
  if (at < n || ta.ids.size() != tb.ids.size())
    throw InputError(a.folder() + " and " + b.folder() + " tokenize the text differently (" + std::to_string(ta.ids.size()) +
                     " and " + std::to_string(tb.ids.size()) + " tokens" +
                     (at < n ? ", first at position " + std::to_string(at) + ": id " + std::to_string(ta.ids[at]) +
                                   " vs " + std::to_string(tb.ids[at])
                             : "") +
                     "): give --ids");
  return ta;
}

// Calls fn(rows of A, rows of B, rows, L) for every head's map of one layer: the kept maps, or
// 64 rows at a time from the kept Q, K and normalisers past the full path's budget.
void eachMapBlock(const ModelRun& a, const ModelRun& b, const ModelConfig& c, int64_t layer,
                  const std::function<void(int64_t head, const float*, const float*, int64_t rows, int64_t L)>& fn) {
  const AttentionTrace& ta = a.layers[layer];
  const AttentionTrace& tb = b.layers[layer];
  const int64_t H = ta.H, L = ta.L;
  if (a.mapsKept() && b.mapsKept()) {
    for (int64_t h = 0; h < H; ++h) fn(h, ta.probs.data.data() + h * L * L, tb.probs.data.data() + h * L * L, L, L);
    return;
  }
  const AttentionOptions options = layerOptions(c, layer);
  const TiledAttention tiled_a = tiledFromTrace(ta, options), tiled_b = tiledFromTrace(tb, options);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i0 = 0; i0 < L; i0 += 64) {
      const int64_t rows = std::min<int64_t>(64, L - i0);
      const Tensor pa = computeTile(tiled_a, 0, h, i0, rows, 0, L).probs, pb = computeTile(tiled_b, 0, h, i0, rows, 0, L).probs;
      fn(h, pa.data.data(), pb.data.data(), rows, L);
    }
}

struct DiffResult {
  Tensor max_abs, js;  // [n_layers, H]
  nlohmann::json next_token;
};

DiffResult measure(const Model& ma, const ModelRun& a, const ModelRun& b) {
  const ModelConfig& c = ma.config;
  AttentionDrift drift(c.n_layers, c.heads);
  for (int64_t l = 0; l < c.n_layers; ++l)
    eachMapBlock(a, b, c, l, [&](int64_t h, const float* pa, const float* pb, int64_t rows, int64_t L) {
      drift.add(l, h, pa, pb, rows, L);
    });
  nlohmann::json positions = nlohmann::json::array();
  const int64_t L = static_cast<int64_t>(a.tokens.ids.size());
  for (int64_t t = 0; t < L && !a.logits.empty() && !b.logits.empty(); ++t) {
    const NextTokenDrift d = nextTokenDrift(a.logits.row(t), b.logits.row(t), c.vocab);
    positions.push_back({{"position", t}, {"token", a.tokens.label[t]}, {"top1_a", d.top_a}, {"top1_b", d.top_b},
                         {"agree", d.top_a == d.top_b}, {"kl", d.kl}});
  }
  return {drift.maxAbs(), drift.js(), positions};
}

// The largest value of table [N, H] with its layer and head, and the mean.
nlohmann::json tableSummary(const Tensor& t) {
  size_t best = 0;
  double sum = 0.0;
  for (size_t k = 0; k < t.data.size(); ++k) sum += t.data[k], best = t.data[k] > t.data[best] ? k : best;
  const int64_t H = t.dim(1);
  return {{"max", t.data[best]}, {"layer", int64_t(best) / H}, {"head", int64_t(best) % H}, {"mean", sum / double(t.data.size())}};
}

nlohmann::json summaryJson(const DiffFlags& flags, const Model& a, const Model& b, int64_t L, const DiffResult& r) {
  int64_t agree = 0;
  double kl_sum = 0.0, kl_max = 0.0;
  for (const nlohmann::json& p : r.next_token) agree += p["agree"].get<bool>(), kl_sum += p["kl"].get<double>(),
                                               kl_max = std::max(kl_max, p["kl"].get<double>());
  const double n = std::max<double>(1.0, double(r.next_token.size()));
  return {{"model_a", a.folder}, {"model_b", b.folder}, {"name_a", a.name()}, {"name_b", b.name()},
          {"layers", a.config.n_layers}, {"heads", a.config.heads}, {"tokens", L},
          {"drift_max_abs", tableSummary(r.max_abs)}, {"drift_js", tableSummary(r.js)},
          {"next_token", {{"positions", r.next_token.size()}, {"agree", agree}, {"mean_kl", kl_sum / n}, {"max_kl", kl_max},
                          {"kl", "KL(A || B)"}}},
          {"out", flags.out}};
}

void printSummary(const nlohmann::json& s) {
  auto head = [](const nlohmann::json& t) {
    return "L" + std::to_string(t["layer"].get<int64_t>()) + "H" + std::to_string(t["head"].get<int64_t>());
  };
  const nlohmann::json& m = s["drift_max_abs"];
  const nlohmann::json& j = s["drift_js"];
  const nlohmann::json& n = s["next_token"];
  std::cout << "attnscope diff: " << s["model_a"].get<std::string>() << " vs " << s["model_b"].get<std::string>() << " ("
            << s["layers"] << " layers x " << s["heads"] << " heads, " << s["tokens"] << " tokens)\n"
            << std::setprecision(4) << "  largest |A - B| of a map  " << m["max"].get<double>() << " (" << head(m) << ")\n"
            << "  Jensen-Shannon per row    mean " << j["mean"].get<double>() << ", largest head " << j["max"].get<double>()
            << " (" << head(j) << ")\n"
            << "  next token                top-1 agrees at " << n["agree"] << " of " << n["positions"]
            << " positions, KL(A || B) mean " << n["mean_kl"].get<double>() << ", max " << n["max_kl"].get<double>() << "\n"
            << "  wrote   drift_max_abs.npy, drift_js.npy [" << s["layers"] << ", " << s["heads"] << "], next_token.json to "
            << s["out"].get<std::string>() << "\n";
}

int diff(const DiffFlags& flags) {
  if (flags.text.given() == !flags.ids.empty()) throw UsageError("give either --text TEXT (or --text-file FILE) or --ids IDS");
  FolderModelRunner a(flags.model_a), b(flags.model_b);
  checkSameShape(a.model(), b.model());
  const ModelTokens tokens = sameTokens(a, b, flags);
  checkOutDir(flags.out);
  const ModelRun& run_a = a.run(tokens);
  const ModelRun& run_b = b.run(tokens);
  const DiffResult r = measure(a.model(), run_a, run_b);
  const nlohmann::json next = {{"model_a", a.model().folder}, {"model_b", b.model().folder}, {"kl", "KL(A || B)"},
                               {"positions", r.next_token}};
  writeOutputFiles(flags.out, "diff",
                   {{"drift_max_abs.npy", [&](const std::string& p) { writeNpy(p, r.max_abs); }},
                    {"drift_js.npy", [&](const std::string& p) { writeNpy(p, r.js); }},
                    {"next_token.json", [&](const std::string& p) { writeFileAtomic(p, next.dump(1) + "\n"); }}});
  const nlohmann::json summary = summaryJson(flags, a.model(), b.model(), int64_t(tokens.ids.size()), r);
  if (flags.json)
    std::cout << summary.dump(1) << "\n";
  else
    printSummary(summary);
  return 0;
}

}  // namespace

int runDiffCommand(int argc, char** argv) {
  CLI::App app{"Quantization drift: two files of one model (same architecture and shape, e.g. F16 and Q4_K_M) on the "
               "same ids.",
               "attnscope diff"};
  DiffFlags flags;
  app.add_option("MODEL_A", flags.model_a, "model folder or .gguf file (hf:ORG/NAME, ollama:NAME[:TAG])")->required();
  app.add_option("MODEL_B", flags.model_b, "another file of the same model")->required();
  addModelTextOptions(app, flags.text);
  app.add_option("--ids", flags.ids, "token ids separated by commas instead of a text");
  app.add_option("--out", flags.out, "output folder (created if missing)")->required();
  app.add_flag("--json", flags.json, "print the summary as JSON on stdout");
  app.footer(
      "Writes drift_max_abs.npy and drift_js.npy [n_layers, H] float32 (per head: the largest |P - Q| of the two\n"
      "probability maps; the mean over query rows of the Jensen-Shannon divergence, natural log) and next_token.json\n"
      "(per position both top-1 ids, whether they agree, KL(A || B) of the next-token distributions).\n"
      "Different shapes or tokenizations: one line, exit 1, nothing written. Exit status: 0 ok, 1 bad input, 2 usage.\n"
      "Example: attnscope diff model-f16.gguf model-q4_k_m.gguf --text 'The cat sat' --out drift");
  return runCommand(app, argc, argv, [&] { return diff(flags); });
}

}  // namespace attnscope
