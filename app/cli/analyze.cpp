// `attnscope analyze`: head analytics of a run (a tensor bundle or the built-in demo with
// the same run options as `compute`, or a trained model folder run on --text): a table of
// metrics per (layer, head, batch item), or with --json one JSON array of objects on
// stdout; --rollout / --flow write attention rollout and flow as .npy into --out.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/generation_mass.h"
#include "analysis/head_clusters.h"
#include "analysis/head_metrics.h"
#include "analysis/head_table.h"
#include "analysis/rollout.h"
#include "cli/commands.h"
#include "cli/out_folder.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "attention/tiles.h"
#include "config/attention_bundle.h"
#include "config/model_source.h"
#include "config/run.h"
#include "tensor/npy.h"
#include "view/view_model.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

struct AnalyzeFlags {
  RunFlags run;                     // run.bundle is the MODEL folder when text is given
  std::optional<std::string> text;  // MODEL --text
  std::optional<std::string> truncate;  // --truncate start|end with --text
  InterventionFlags interventions;      // with --text
  bool json = false;
  std::optional<std::string> sort;  // METRIC or METRIC:asc
  double min_correlation = 0.5;
  int64_t recent = kDefaultRecentWindow;  // W of the gen_recent_mass column
  bool rollout = false;
  bool flow = false;
  std::string out;
};

// What analyze measures: the maps of one run and how to describe where they came from.
struct Analyzed {
  std::shared_ptr<const ViewModel> view;
  std::string source;
  std::vector<std::string> notes;
  std::string mask;          // mask text, e.g. "causal"
  std::string mistake_line;  // "" or "no-head-split (on purpose): ..."
  bool dropout_applied = false;
};

// The note of a run measured in tiles (maps past the full path's budget).
std::string measuredInTilesNote() {
  return "measured in tiles: the full maps would take more than the full path's " +
         formatNumber(static_cast<double>(fullPathBudgetBytes()) / (1 << 20)) +
         " MiB (the same numbers, computed row block by row block)";
}

Analyzed analyzeCoreRun(const RunFlags& flags) {
  ConfiguredRun run = configureRunFromFlags(flags);
  if (run.tiled) {  // as the app: maps past the full path's budget are measured in tiles
    Analyzed a;
    a.source = run.source;
    a.notes = run.notes;
    a.mask = run.options.mask.toString();
    a.notes.push_back(measuredInTilesNote());
    Run tiled{std::move(run.inputs), run.options, run.source, run.notes, true};
    a.view = buildTiledView(tiled, {});
    return a;
  }
  const auto trace = std::make_shared<const AttentionTrace>(runAttention(run.inputs, run.options));
  Analyzed a;
  a.view = std::make_shared<const ViewModel>(viewFromTrace(trace));
  a.source = run.source;
  a.notes = run.notes;
  a.mask = run.options.mask.toString();
  if (trace->mistake != Mistake::None)
    a.mistake_line = std::string(mistakeName(trace->mistake)) + " (on purpose): " + trace->mistake_note;
  a.dropout_applied = trace->dropout_applied;
  return a;
}

// An attention bundle (attentions.npy / .npz): maps computed elsewhere, nothing to run.
Analyzed analyzeAttentionBundle(const std::string& dir) {
  Analyzed a;
  a.view = std::make_shared<const ViewModel>(viewFromImported(loadAttentionBundle(dir)));
  a.source = "attention bundle " + dir + (a.view->model.empty() ? "" : " (" + a.view->model + ")");
  a.notes = a.view->warnings;
  if (!a.view->notes.empty()) a.notes.push_back(a.view->notes);
  a.mask = "unknown (imported maps; rows of zeros count as fully masked)";
  return a;
}

bool anyRunOption(const RunFlags& r) {
  return r.demo || r.heads || r.mask || r.fill || r.scale || r.dropout || r.seed || r.valid_lens || r.mistake ||
         anyVariantFlag(r.variants);
}

// A trained model folder (attnscope-model/1 or Hugging Face) on a text: one layer per block, B = 1; the same settings
// (source model) and view as the app and `export MODEL --text` build.
Analyzed analyzeModelRun(const std::string& folder, const std::string& text, Truncate truncate,
                         const InterventionFlags& interventions) {
  Settings settings = settingsForModel(Settings(), folder, text);
  settings.model_truncate = truncate;
  settings.model_ablate = interventions.ablate;
  settings.model_knockout = interventions.knockout;
  Analyzed a;
  a.view = buildView(settings);
  a.source = "model " + a.view->model + " (" + folder + ") on " + std::to_string(a.view->mapL()) + " tokens";
  if (!a.view->interventions.empty()) a.source += ", " + a.view->interventions;
  if (a.view->tiled) a.notes.push_back(measuredInTilesNote());
  if (a.view->unknown_tokens > 0)
    a.notes.push_back(std::to_string(a.view->unknown_tokens) + " tokens outside the vocabulary map to the unknown id");
  a.mask = a.view->encoder ? "none (bidirectional encoder)" : "causal";
  return a;
}

// The maps analyze measures: a model run (MODEL --text), an attention bundle, or a core run.
Analyzed analyzeSource(const AnalyzeFlags& flags) {
  if (flags.text) return analyzeModelRun(flags.run.bundle, *flags.text, truncateOf(flags.truncate, true), flags.interventions);
  if (flags.interventions.given()) throw UsageError("--ablate/--knockout: only with MODEL --text");
  if (!flags.run.demo && bundleKind(flags.run.bundle) == BundleKind::Attentions) {
    if (anyRunOption(flags.run))
      throw UsageError(flags.run.bundle + " holds attention maps computed elsewhere: the run options (--heads, --mask, ...) do not apply");
    return analyzeAttentionBundle(flags.run.bundle);
  }
  return analyzeCoreRun(flags.run);
}

struct SortChoice {
  const MetricInfo* metric = nullptr;
  bool descending = true;
};

SortChoice parseSort(const std::string& text) {
  SortChoice choice;
  std::string name = text;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string direction = text.substr(colon + 1);
    if (direction != "asc" && direction != "desc")
      throw UsageError("--sort: '" + direction + "' is not asc or desc");
    choice.descending = direction == "desc";
    name = text.substr(0, colon);
  }
  choice.metric = findHeadMetric(name);
  if (!choice.metric) {
    std::string names;
    for (const MetricInfo& info : headMetricInfos()) names += (names.empty() ? "" : ", ") + std::string(info.name);
    throw UsageError("--sort: unknown metric '" + name + "' (one of: " + names + ")");
  }
  return choice;
}

std::string formatMetric(double value) {
  if (std::isnan(value)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", value);
  return buf;
}

std::string padLeft(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

void printJson(const std::vector<HeadMetrics>& rows, const std::vector<size_t>& order, const ViewModel& view,
               const std::vector<HeadClusters>& clusters) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (size_t k : order) {
    const HeadMetrics& m = rows[k];
    nlohmann::ordered_json object = {{"layer", m.layer}, {"head", m.head}, {"batch", m.batch}};
    for (const MetricInfo& info : headMetricInfos()) {
      if (isGenerationMetric(info) && view.first_generated < 0) continue;  // only over a generation
      const double value = m.*info.field;
      object[info.name] = std::isnan(value) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
    }
    object["cluster"] = clusters[m.batch].group[m.layer * view.H + m.head];
    array.push_back(object);
  }
  std::cout << array.dump(2) << "\n";
}

void printTable(const Analyzed& source, const std::vector<HeadMetrics>& rows, const std::vector<size_t>& order,
                const ViewModel& view, const std::vector<HeadClusters>& clusters, double min_correlation) {
  std::cout << "attnscope analyze: " << source.source << "\n";
  std::cout << "  sizes   layers=" << view.layers << " B=" << view.B << " H=" << view.H << " L=" << view.mapL()
            << " S=" << view.mapS() << "   mask " << source.mask << "\n";
  if (!source.mistake_line.empty()) std::cout << "  mistake " << source.mistake_line << "\n";
  for (const std::string& n : source.notes) std::cout << "  note: " << n << "\n";
  std::cout << "  means over the query rows that are not fully masked; '-' = no row to average"
            << (source.dropout_applied ? "; probabilities after dropout" : "") << "\n\n";

  std::vector<std::string> headings = {"layer", "head", "batch"};
  const bool generation = view.first_generated >= 0;  // the gen_* columns: only over a generation
  for (const MetricInfo& info : headMetricInfos())
    if (generation || !isGenerationMetric(info)) headings.push_back(info.heading);
  headings.push_back("group");
  std::vector<std::vector<std::string>> cells;
  for (size_t k : order) {
    const HeadMetrics& m = rows[k];
    std::vector<std::string> line = {std::to_string(m.layer), std::to_string(m.head), std::to_string(m.batch)};
    for (const MetricInfo& info : headMetricInfos())
      if (generation || !isGenerationMetric(info)) line.push_back(formatMetric(m.*info.field));
    line.push_back(std::to_string(clusters[m.batch].group[m.layer * view.H + m.head]));
    cells.push_back(line);
  }
  std::vector<size_t> widths(headings.size());
  for (size_t c = 0; c < headings.size(); ++c) {
    widths[c] = headings[c].size();
    for (const auto& line : cells) widths[c] = std::max(widths[c], line[c].size());
  }
  for (size_t c = 0; c < headings.size(); ++c) std::cout << (c ? "  " : "") << padLeft(headings[c], widths[c]);
  std::cout << "\n";
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) std::cout << (c ? "  " : "") << padLeft(line[c], widths[c]);
    std::cout << "\n";
  }

  std::cout << "\nGroups: heads whose maps correlate (Pearson, average linkage) at r >= "
            << formatNumber(min_correlation) << "\n";
  for (int64_t b = 0; b < view.B; ++b) {
    const HeadClusters& c = clusters[b];
    std::cout << "  batch " << b << ": " << c.count << (c.count == 1 ? " group" : " groups") << "\n";
    for (int64_t g = 0; g < c.count; ++g) {
      std::cout << "    group " << g << ":";
      for (int64_t n : c.order)
        if (c.group[n] == g) std::cout << " L" << n / view.H << "H" << n % view.H;
      std::cout << "\n";
    }
  }
  std::cout << "\nInduction: ";
  bool any = false;
  // The real map's query tokens (a tiled view's own labels name overview blocks).
  const std::vector<std::vector<std::string>>& tokens = view.tiled ? view.tiled->query_tokens : view.query_tokens;
  for (int64_t b = 0; b < view.B; ++b) {
    if (view.mapL() != view.mapS()) continue;
    const RepeatedSegment s = findRepeatedSegment(tokens[b]);
    if (!s.found()) continue;
    std::cout << (any ? "; " : "") << "batch " << b << " repeats tokens " << s.first << ".." << s.first + s.length - 1
              << " at " << s.second << ".." << s.second + s.length - 1;
    any = true;
  }
  std::cout << (any ? " (score: mean p from each repeated token to the token after its first occurrence)\n"
                    : "no repeated segment of 2 or more tokens in the input\n");
}

// Writes rollout.npy / flow.npy ([layers, B, L, L]) into out, staged: both are computed
// before either file is written. Names each file on stderr (stdout may be JSON).
void writeAcrossLayers(const AnalyzeFlags& flags, const MapStack& maps) {
  checkOutDir(flags.out);
  Tensor rollout, flow;
  if (flags.rollout) rollout = attentionRollout(maps);
  if (flags.flow) {
    const bool show = ::isatty(STDERR_FILENO);
    int last = -1;
    flow = attentionFlow(maps, [&](double fraction) {
      const int percent = static_cast<int>(fraction * 100);
      if (show && percent != last) std::cerr << "\rattention flow: " << percent << "%" << std::flush;
      last = percent;
      return true;
    });
    if (show) std::cerr << "\n";
  }
  std::vector<OutputFile> files;
  for (const auto& [name, tensor] : {std::make_pair("rollout.npy", &rollout), std::make_pair("flow.npy", &flow)}) {
    if (tensor->empty()) continue;
    const Tensor* t = tensor;
    files.push_back({name, [t](const std::string& path) { writeNpy(path, *t); }});
  }
  writeOutputFiles(flags.out, "analyze", files);
  for (const OutputFile& f : files)
    std::cerr << "wrote " << (fs::path(flags.out) / f.first).string() << " " << shapeToString({maps.layers, maps.B, maps.L, maps.L}) << "\n";
}

int analyze(const AnalyzeFlags& flags) {
  const Analyzed source = analyzeSource(flags);
  const ViewModel& view = *source.view;
  if ((flags.rollout || flags.flow) && view.tiled)
    throw InputError("--rollout / --flow need the full maps; this run is measured in tiles (L=" +
                     std::to_string(view.mapL()) + ", S=" + std::to_string(view.mapS()) + ", H=" + std::to_string(view.H) + ")");
  const HeadTable table = headTableOf(view, flags.min_correlation, flags.recent);
  const std::vector<HeadMetrics>& rows = table.metrics;
  const std::vector<HeadClusters>& clusters = table.clusters;
  std::vector<size_t> order(rows.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  if (flags.sort) {
    const SortChoice sort = parseSort(*flags.sort);
    order = orderBy(rows, *sort.metric, sort.descending);
  }
  if (flags.rollout || flags.flow) writeAcrossLayers(flags, mapStackOf(view));
  if (flags.json) printJson(rows, order, view, clusters);
  else printTable(source, rows, order, view, clusters, flags.min_correlation);
  return 0;
}

}  // namespace

int runAnalyzeCommand(int argc, char** argv) {
  CLI::App app{"Measure every head of a run: entropy, max probability, mean distance, sink, diagonal and "
               "previous-token mass, effective keys, induction score, groups of similar heads; optionally "
               "attention rollout and flow.",
               "attnscope analyze"};
  AnalyzeFlags flags;
  addRunOptions(app, flags.run);
  app.add_option("--text", flags.text, "run the trained model folder given as MODEL (instead of BUNDLE) on this text");
  addTruncateOption(app, flags.truncate);
  addInterventionOptions(app, flags.interventions);
  app.add_flag("--json", flags.json, "print one JSON array of objects (one per layer, head, batch item) on stdout");
  app.add_option("--sort", flags.sort, "order rows by a metric, largest first (METRIC:asc for smallest first)");
  app.add_option("--recent", flags.recent,
                 "a generation bundle: W of the gen_recent_mass column (mass on the last W tokens, default 8)");
  app.add_option("--min-correlation", flags.min_correlation,
                 "group heads whose maps correlate at least this much (Pearson r, default 0.5)");
  app.add_flag("--rollout", flags.rollout, "write attention rollout [layers, B, L, L] to OUT/rollout.npy");
  app.add_flag("--flow", flags.flow, "write attention flow [layers, B, L, L] to OUT/flow.npy");
  app.add_option("--out", flags.out, "folder for rollout.npy / flow.npy (created if missing)");
  app.footer(
      "Metrics are means over the query rows that are not fully masked (null / '-' when there is none).\n"
      "JSON fields: layer, head, batch, entropy_bits, max_prob, mean_distance, sink_mass, diag_mass,\n"
      "prev_mass, effective_keys, induction, cluster; a generation bundle (tokens.txt with the `generated`\n"
      "column) also gen_sink_mass and gen_recent_mass (--recent W). Run options as in `attnscope compute`;\n"
      "MODEL --text TEXT analyzes every layer of a trained model folder (see `attnscope model run`).\n"
      "Exit status: 0 ok, 1 bad input (one line on stderr naming the file), 2 usage error.\n"
      "Example: attnscope analyze --demo --heads 4 --mask causal --json");
  const auto checkFlagsAndAnalyze = [&] {
    if (flags.text) {
      const RunFlags& r = flags.run;
      if (r.bundle.empty()) throw UsageError("--text needs a MODEL folder");
      if (anyRunOption(r))
        throw UsageError("--text runs a trained model: --demo and the run options (--heads, --mask, ...) do not apply");
    }
    truncateOf(flags.truncate, flags.text.has_value());
    checkRunFlags(flags.run);
    if (flags.sort) parseSort(*flags.sort);
    if (flags.recent < 1) throw UsageError("--recent: W must be at least 1, got " + std::to_string(flags.recent));
    if (!(flags.min_correlation >= -1.0 && flags.min_correlation <= 1.0))
      throw UsageError("--min-correlation: r must be in [-1, 1], got " + formatNumber(flags.min_correlation));
    if ((flags.rollout || flags.flow) && flags.out.empty()) throw UsageError("--rollout and --flow need --out DIR");
    if (!flags.out.empty() && !flags.rollout && !flags.flow)
      throw UsageError("--out is only used with --rollout or --flow");
    return analyze(flags);
  };
  return runCommand(app, argc, argv, checkFlagsAndAnalyze, "internal error: ");
}

}  // namespace attnscope
