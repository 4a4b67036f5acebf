// `attnscope export`: heatmap figures (PNG, SVG, PDF) and raw matrices (.npy, .csv) with
// no display and no OpenGL, through the same exportFigures() as the app's Ctrl+S.
// Prints every path written, one per line.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/run_command.h"
#include "cli/run_options.h"
#include "config/model_source.h"
#include "config/run.h"
#include "figure/figure.h"

namespace attnscope {
namespace {

struct ExportFlags {
  std::string bundle;
  bool demo = false;
  std::string settings_file;
  std::string out;
  std::string what = "probs";
  std::optional<std::string> layers;
  std::optional<std::string> heads;
  std::optional<int64_t> batch;
  std::optional<std::string> format;  // default: the settings' export formats (png)
  std::optional<std::string> colormap;
  std::optional<int64_t> cell_px;
  bool full_resolution = false;  // grid: no cap at kMaxAtlasSide px
  std::optional<std::string> mask;
  std::optional<int64_t> heads_count;
  VariantFlags variants;
  ModelTextFlags model_text;  // with a MODEL folder
  InterventionFlags interventions;  // with a MODEL folder
};

std::vector<std::string> splitList(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    if (first == std::string::npos) throw UsageError(flag + ": empty item in '" + text + "'");
    items.push_back(item.substr(first, last - first + 1));
  }
  if (items.empty()) throw UsageError(flag + ": empty list");
  return items;
}

void checkChoices(const std::string& flag, const std::vector<std::string>& given, const std::vector<std::string>& known) {
  for (const std::string& name : given) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string choices;
      for (size_t i = 0; i < known.size(); ++i) choices += (i == 0 ? "" : i + 1 == known.size() ? " or " : ", ") + known[i];
      throw UsageError(flag + ": unknown value '" + name + "' (use " + choices + ")");
    }
  }
}

// "all" -> every index; "0,3" -> those (range checked once the view's sizes are known).
std::optional<std::vector<int64_t>> parseIndices(const std::string& flag, const char* what, const std::string& text) {
  if (text == "all") return std::nullopt;
  std::vector<int64_t> indices;
  for (const std::string& item : splitList(flag, text)) {
    char* end = nullptr;
    const long long index = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || index < 0) {
      throw UsageError(flag + ": '" + item + "' is not a " + what + " index (use all, or indices such as 0,3)");
    }
    indices.push_back(index);
  }
  return indices;
}

// Every index below count when `given` is nullopt ("all"); else `given`, each checked.
std::vector<int64_t> checkIndices(const std::optional<std::vector<int64_t>>& given, int64_t count,
                                  const std::string& flag, const char* what, const char* owner) {
  std::vector<int64_t> indices;
  if (!given) {
    for (int64_t i = 0; i < count; ++i) indices.push_back(i);
    return indices;
  }
  for (int64_t index : *given) {
    if (index >= count) {
      throw InputError(flag + ": " + what + " " + std::to_string(index) + " is out of range (" + owner + " has " +
                       std::to_string(count) + " " + what + (count == 1 ? "" : "s") + ": 0-" +
                       std::to_string(count - 1) + ")");
    }
  }
  return *given;
}

// The settings (and, from a settings file, the focused map) the flags describe.
Settings settingsFromFlags(const ExportFlags& flags, ViewFocus& focus) {
  Settings settings;
  if (!flags.settings_file.empty()) {
    settings = loadSettingsFile(flags.settings_file, &focus);
  } else if (isModelFolder(flags.bundle)) {
    settings = settingsForModel(settings, flags.bundle, readModelText(flags.model_text));
    settings.model_truncate = truncateOf(flags.model_text.truncate, true);
    settings.model_ablate = flags.interventions.ablate;
    settings.model_knockout = flags.interventions.knockout;
  } else if (!flags.bundle.empty()) {
    settings = settingsForBundle(bundleDefaults(), flags.bundle);
  }
  if (flags.mask) {
    try {
      settings.mask = MaskSpec::parse(*flags.mask);
    } catch (const InputError& e) {
      throw UsageError(std::string("--mask: ") + e.what());
    }
  }
  if (flags.heads_count) settings.heads = *flags.heads_count;
  applyVariantFlags(flags.variants, settings);
  return settings;
}

int exportCommand(const ExportFlags& flags) {
  const int sources = int(flags.demo) + int(!flags.bundle.empty()) + int(!flags.settings_file.empty());
  if (sources != 1) {
    throw UsageError(sources == 0 ? "give --demo, a BUNDLE folder or --settings FILE"
                                  : "give only one of --demo, BUNDLE and --settings FILE");
  }
  const bool model = isModelFolder(flags.bundle);
  if (model && !flags.model_text.given()) throw UsageError(flags.bundle + " is a model folder: give --text TEXT or --text-file FILE");
  if (!model && flags.model_text.given()) throw UsageError("--text/--text-file: only with a MODEL folder (config.json)");
  if (!model && flags.model_text.truncate) throw UsageError("--truncate: only with a MODEL folder (config.json)");
  if (!model && flags.interventions.given()) throw UsageError("--ablate/--knockout: only with a MODEL folder (config.json)");
  truncateOf(flags.model_text.truncate, flags.model_text.given());  // a bad value: usage error before any file
  if (model && (flags.mask || flags.heads_count || anyVariantFlag(flags.variants)))
    throw UsageError("--mask/--heads-count/variant flags: a trained model fixes its heads, its mask and its attention");
  ExportRequest request;
  request.what = splitList("--what", flags.what);
  checkChoices("--what", request.what, exportWhatNames());
  if (flags.format) {
    request.formats = splitList("--format", *flags.format);
    checkChoices("--format", request.formats, exportFormatNames());
  }
  if (flags.colormap) {
    const std::optional<Colormap> colormap = colormapNames().find(*flags.colormap);
    if (!colormap) throw UsageError("--colormap: " + colormapNames().unknown(*flags.colormap));
    request.colormap = *colormap;
  }
  if (flags.cell_px) {
    if (*flags.cell_px < 0) throw UsageError("--cell-px: must be >= 1 (or 0 = auto), got " + std::to_string(*flags.cell_px));
    request.cell_px = *flags.cell_px;
  }
  request.full_resolution = flags.full_resolution;
  if (flags.heads_count && *flags.heads_count < 1) {
    throw UsageError("--heads-count: must be >= 1, got " + std::to_string(*flags.heads_count));
  }
  if (flags.batch && *flags.batch < 0) throw UsageError("--batch: must be >= 0, got " + std::to_string(*flags.batch));
  checkVariantFlags(flags.variants, flags.mask);
  // No --heads: the focused head (0, or the settings file's); no --layers: every layer.
  const std::optional<std::vector<int64_t>> heads =
      flags.heads ? parseIndices("--heads", "head", *flags.heads) : std::vector<int64_t>{};
  const std::optional<std::vector<int64_t>> layers =
      flags.layers ? parseIndices("--layers", "layer", *flags.layers) : std::nullopt;
  const Settings settings = settingsFromFlags(flags, request.focus);
  if (!flags.format) request.formats = settings.export_formats;

  // A page only: a long text's maps are pooled as they are made (a gigabyte less at 1,000 tokens).
  ViewRunners runners;
  runners.pooled_model_maps = request.formats == std::vector<std::string>{"html"};
  const std::shared_ptr<const ViewModel> view = buildView(settings, runners);
  for (const std::string& warning : view->warnings) std::cerr << "attnscope export: warning: " << warning << "\n";
  request.heads = checkIndices(heads, view->H, "--heads", "head", "the model");
  request.layers = checkIndices(layers, view->layers, "--layers", "layer", "the model");
  if (flags.batch) {
    if (*flags.batch >= view->B) {
      throw InputError("--batch: item " + std::to_string(*flags.batch) + " is out of range (the input has " +
                       std::to_string(view->B) + " batch item" + (view->B == 1 ? "" : "s") + ": 0-" +
                       std::to_string(view->B - 1) + ")");
    }
    request.batch = *flags.batch;
  }
  request.out_dir = flags.out;

  for (const std::string& path : exportFigures(settings, *view, request)) std::cout << path << "\n";
  return 0;
}

}  // namespace

int runExportCommand(int argc, char** argv) {
  CLI::App app{"Export attention heatmaps as figures (png, svg, pdf), raw matrices (npy, csv) and one interactive "
               "page of every layer and head (html), "
               "with a settings JSON beside each, without a display.",
               "attnscope export"};
  ExportFlags flags;
  app.add_option("BUNDLE", flags.bundle,
                 "bundle folder: attentions.npy/.npz [layers,B,H,L,S] (maps computed elsewhere) or "
                 "query.npy [B,L,Dq], ... (computed here); or a MODEL folder (config.json) with --text");
  app.add_flag("--demo", flags.demo, "use the built-in text demo");
  app.add_option("--settings", flags.settings_file, "settings JSON (as saved beside every export or by the app)");
  app.add_option("--out", flags.out, "export folder (created if missing; default: the settings' export folder "
                                     "or ~/Pictures/attnscope)");
  app.add_option("--what", flags.what, "figures, comma-separated: probs, scores, mask, rollout, flow, grid (default probs); rollout and flow: one map per layer, sources with several layers of self-attention");
  app.add_option("--layers", flags.layers, "layers to export: all (default), or indices such as 0,2; the grid "
                                           "figure is the atlas of these layers");
  app.add_option("--heads", flags.heads, "heads to export for probs/scores: all, or indices such as 0,3 (default: the settings' focused head, 0)");
  app.add_option("--batch", flags.batch, "batch item (default: the settings' batch item, 0)");
  app.add_option("--format", flags.format, "formats, comma-separated: png, svg, pdf, npy, csv, html (default: the settings' formats, png); html: one self-contained page of every layer and head, attention_bN_<mask>_LxS.html");
  app.add_option("--colormap", flags.colormap, colormapNames().list(" or ") + " (scores are always diverging)");
  app.add_option("--cell-px", flags.cell_px, "pixels per cell (default: matrix >= 512 px on its longer side)");
  app.add_flag("--full-resolution", flags.full_resolution,
               "grid: every cell in the PNG/SVG/PDF (default: at most 4096 px on the longer side, cells pooled beyond)");
  app.add_option("--mask", flags.mask, "mask: none, or terms joined by '+' (causal, window:W, ...)");
  app.add_option("--heads-count", flags.heads_count, "number of heads H of the model");
  addVariantFlags(app, flags.variants);
  addModelTextOptions(app, flags.model_text);
  addInterventionOptions(app, flags.interventions);

  return runCommand(app, argc, argv, [&] { return exportCommand(flags); });
}

}  // namespace attnscope
