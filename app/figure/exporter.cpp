// exportFigures: what the app's Ctrl+S and `attnscope export` both run.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "figure.h"
#include "analysis/layer_maps.h"
#include "config/run.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// One file of a figure, rendered before anything is written.
struct OutputFile {
  std::string extension;
  std::string bytes;  // png, svg, pdf, csv, json
  Tensor matrix;      // npy
};

struct FigureJob {
  std::string base_name;
  std::vector<OutputFile> files;
};

std::string joinNames(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

void checkNames(const std::vector<std::string>& given, const std::vector<std::string>& known, const char* kind) {
  if (given.empty()) throw InputError(std::string("export: no ") + kind + " given (use " + joinNames(known) + ")");
  for (const std::string& name : given) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InputError(std::string("export: unknown ") + kind + " '" + name + "' (use " + joinNames(known) + ")");
    }
  }
}

// One figure: probs/scores of (layers[0], head), the mask, rollout or flow of layers[0], or
// the atlas of layers.
Figure buildFigure(const std::string& what, const ViewModel& view, const std::vector<int64_t>& layers,
                   int64_t batch, int64_t head, Colormap map, bool log_scale) {
  const std::optional<MapKind> kind = mapKindNames().find(what);
  if (kind && mapKindInfo(*kind).across_layers) return acrossLayersFigure(view, *kind, layers[0], batch, map);
  if (what == "probs") return probsFigure(view, layers[0], batch, head, map, log_scale);
  if (what == "scores") return scoresFigure(view, layers[0], batch, head);
  if (what == "mask") return maskFigure(view, layers[0], batch, map);
  return gridFigure(view, layers, batch, map, log_scale);
}

std::string joinIndices(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

// The distinct values in order; `all` (0..count-1) when none are given.
std::vector<int64_t> distinctOrAll(const std::vector<int64_t>& given, int64_t count) {
  std::vector<int64_t> out;
  for (int64_t v : given)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  if (given.empty())
    for (int64_t v = 0; v < count; ++v) out.push_back(v);
  return out;
}

// The HTML page's caption: the model (or the sandbox), where the maps came from, the text.
void setHtmlCaption(HtmlRequest& html, const Settings& settings, const ViewModel& view) {
  html.model = !view.model.empty()                       ? view.model
               : settings.source == InputSource::Model  ? settings.model
               : settings.source == InputSource::Bundle ? "attention from a bundle"
                                                         : "attnscope sandbox (random weights)";
  switch (settings.source) {
    case InputSource::Model:
      html.source = "model run";
      html.text = settings.model_text;
      break;
    case InputSource::Text:
      html.source = "text, " + std::string(viewSourceName(view.source));
      html.text = settings.text + (settings.cross_attention ? "\nkeys: " + settings.key_text : "");
      break;
    case InputSource::Synthetic:
      html.source = "synthetic input";
      break;
    case InputSource::Bundle:
      html.source = (view.source == ViewSource::Imported ? "attention bundle " : "tensor bundle ") + settings.bundle_path;
      break;
  }
}

// The formats but "html": those rendered per figure ("html" is one page of the whole view).
std::vector<std::string> figureFormats(const std::vector<std::string>& formats) {
  std::vector<std::string> figure_formats;
  for (const std::string& format : formats)
    if (format != "html") figure_formats.push_back(format);
  return figure_formats;
}

// Pictures from `image` (the grid atlas capped in size), data files from `figure`.
OutputFile renderFile(const std::string& format, const Figure& figure, const Figure& image) {
  if (format == "png") return {format, renderFigurePng(image), {}};
  if (format == "svg") return {format, renderFigureSvg(image), {}};
  if (format == "pdf") return {format, renderFigurePdf(image), {}};
  if (format == "csv") return {format, matrixCsv(figure), {}};
  if (format == "html") return {format, renderFigureHtml(figure), {}};  // a single figure's page (exportFigureFiles)
  return {format, {}, matrixTensor(figure)};
}

// The figure rendered in every format under base_name; the caller adds its settings JSON.
FigureJob renderJob(const std::string& base_name, const Figure& figure, const std::vector<std::string>& formats,
                    const Figure* image = nullptr) {
  FigureJob job;
  job.base_name = base_name;
  for (const std::string& format : formats) job.files.push_back(renderFile(format, figure, image ? *image : figure));
  return job;
}

}  // namespace

std::vector<std::string> exportWhatNames() {
  std::vector<std::string> names;
  for (const MapKindInfo& info : mapKinds()) names.push_back(info.name);
  names.push_back("grid");
  return names;
}


std::string defaultExportDir() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/Pictures/attnscope";
}

std::string exportFolder(const Settings& settings) {
  return settings.export_dir.empty() ? defaultExportDir() : settings.export_dir;
}

void prepareExportFolder(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (!error && !fs::is_directory(dir, error)) error = std::make_error_code(std::errc::not_a_directory);
  if (!error && ::access(dir.c_str(), W_OK) != 0) error = std::error_code(errno, std::generic_category());
  if (error) throw InputError("export folder " + dir + " is not writable: " + error.message());
}

std::string exportBaseName(const std::string& what, const std::vector<int64_t>& layers, int64_t head,
                           int64_t batch, const std::string& mask_short_name, int64_t L, int64_t S,
                           const CellWindow& window) {
  std::string name = what;
  if (!layers.empty()) name += "_L" + joinIndices(layers);
  if (head >= 0) name += "_H" + std::to_string(head);
  name += "_b" + std::to_string(batch) + "_" + mask_short_name + "_L" + std::to_string(L) + "xS" + std::to_string(S);
  return window.whole() ? name : name + "_" + windowName(window);
}

std::string freeBaseName(const std::string& dir, const std::string& base,
                         const std::vector<std::string>& extensions) {
  for (int suffix = 0;; ++suffix) {
    const std::string name = suffix == 0 ? base : base + "_" + std::to_string(suffix);
    const bool taken = std::any_of(extensions.begin(), extensions.end(), [&](const std::string& ext) {
      std::error_code error;
      return fs::exists(fs::path(dir) / (name + "." + ext), error) || error;
    });
    if (!taken) return name;
  }
}

namespace {

// Writes every job's files under free names in dir (created when missing), all or nothing:
// an export that fails half-way (disk full) takes its files back. Returns the paths.
std::vector<std::string> writeJobs(const std::string& dir, std::vector<FigureJob> jobs) {
  prepareExportFolder(dir);
  std::vector<std::string> written;
  try {
    for (FigureJob& job : jobs) {
      std::vector<std::string> extensions;
      for (const OutputFile& file : job.files) extensions.push_back(file.extension);
      const std::string name = freeBaseName(dir, job.base_name, extensions);
      for (const OutputFile& file : job.files) {
        const std::string path = (fs::path(dir) / (name + "." + file.extension)).string();
        if (file.extension == "npy") {
          writeNpy(path, file.matrix);
        } else {
          writeFileAtomic(path, file.bytes);
        }
        written.push_back(path);
      }
    }
  } catch (...) {
    // All or nothing: an export that fails half-way (disk full) takes its files back.
    for (const std::string& path : written) {
      std::error_code ignored;
      fs::remove(path, ignored);
    }
    throw;
  }
  return written;
}

}  // namespace

namespace {

// Rollout and flow asked of a view without them (the CLI; the app builds them first):
// built here, on a copy. Empty when the view has every map asked for.
std::optional<ViewModel> withAcrossLayerMaps(const ViewModel& shown_view, const std::vector<std::string>& what_names) {
  std::optional<ViewModel> extended;
  for (const std::string& what : what_names) {
    const std::optional<MapKind> kind = mapKindNames().find(what);
    if (!kind || !mapKindInfo(*kind).across_layers || shown_view.acrossLayers(*kind)) continue;
    if (!extended) extended = shown_view;
    const std::string why = acrossLayersUnavailable(*extended);
    if (!why.empty()) throw InputError(what + ": " + why);
    addAcrossLayerMaps(*extended, *kind);
  }
  return extended;
}

// A request with its defaults filled in from the settings and the view.
struct ExportPlan {
  int64_t batch = 0;
  std::vector<int64_t> heads, layers;
  bool all_layers = false;
  Colormap colormap{};
  int64_t cell_px = 0;
  std::string dir;
  std::string mask_name;  // the mask's short name, for file names
  std::vector<std::string> figure_formats;  // the request's formats but "html"
  bool html = false;                        // one page of the whole view too
};

ExportPlan planExport(const Settings& settings, const ViewModel& view, const ExportRequest& request) {
  ExportPlan plan;
  plan.batch = request.batch >= 0 ? request.batch : request.focus.batch_item;
  plan.heads = distinctOrAll(request.heads.empty() ? std::vector<int64_t>{request.focus.head} : request.heads, view.H);
  plan.layers = distinctOrAll(request.layers, view.layers);
  plan.all_layers = static_cast<int64_t>(plan.layers.size()) == view.layers;
  plan.colormap = request.colormap.value_or(settings.prob_colormap);
  plan.cell_px = request.cell_px >= 0 ? request.cell_px : settings.cell_px;
  if (plan.cell_px < 0)
    throw InputError("export: cell size must be >= 0 px (0 = auto), got " + std::to_string(plan.cell_px));
  plan.dir = request.out_dir.empty() ? exportFolder(settings) : request.out_dir;
  // A trained model's mask is its own (causal), not the sandbox's setting.
  plan.mask_name = view.source == ViewSource::Imported   ? "imported"
                   : view.source == ViewSource::ModelRun ? MaskSpec::parse(view.maps[0].mask_name).shortName()
                                                         : settings.mask.shortName();
  plan.figure_formats = figureFormats(request.formats);
  plan.html = plan.figure_formats.size() < request.formats.size();
  return plan;
}

// One figure to export.
struct ExportItem {
  std::string what;
  std::vector<int64_t> layers;       // figure layers
  std::vector<int64_t> name_layers;  // layers in the file name
  int64_t head;                      // -1: none
};

// One figure per (layer, head) for probs/scores; one per layer for rollout/flow; one mask
// (of the first layer); one atlas. None when only the HTML page is asked for.
std::vector<ExportItem> exportItems(const std::vector<std::string>& what_names, const ExportPlan& plan) {
  std::vector<ExportItem> items;
  if (plan.figure_formats.empty()) return items;
  for (const std::string& what : what_names) {
    if (what == "probs" || what == "scores") {
      for (int64_t layer : plan.layers)
        for (int64_t head : plan.heads) items.push_back({what, {layer}, {layer}, head});
    } else if (what == "mask") {
      items.push_back({what, {plan.layers[0]}, {}, -1});
    } else if (what != "grid") {  // rollout, flow
      for (int64_t layer : plan.layers) items.push_back({what, {layer}, {layer}, -1});
    } else {
      items.push_back({what, plan.layers, plan.all_layers ? std::vector<int64_t>{} : plan.layers, -1});
    }
  }
  return items;
}

// The settings (and focused map) that reopen or re-export exactly this item's view.
std::string reopenSettingsJson(const Settings& settings, const ViewModel& view, const ExportRequest& request,
                               const ExportPlan& plan, const ExportItem& item) {
  Settings reopen = settings;
  reopen.prob_colormap = plan.colormap;
  reopen.cell_px = plan.cell_px;
  reopen.export_formats = request.formats;
  ViewFocus focus = request.focus;
  focus.batch_item = plan.batch;
  focus.layer = item.layers[0];
  if (item.head >= 0) focus.head = item.head;
  return exportSettingsJson(reopen, focus, view).dump(2) + "\n";
}

// One item's files, rendered in memory.
FigureJob itemJob(const Settings& settings, const ViewModel& view, const ExportRequest& request,
                  const ExportPlan& plan, const ExportItem& item) {
  // A tiled source's zoomed window is computed exactly (its maps here are the overview);
  // any other zoomed window (the app's focus view) crops the single-map figures, not the grid.
  const bool tiled_window = view.tiled && (item.what == "probs" || item.what == "scores") && !request.window.whole();
  const CellWindow window = item.what == "grid" ? CellWindow{} : clampWindow(request.window, view.mapL(), view.mapS());
  const int64_t head = std::max<int64_t>(item.head, 0);
  Figure figure = tiled_window
                      ? tiledWindowFigure(item.what, view, item.layers[0], plan.batch, head, window, plan.colormap, settings.log_scale)
                      : buildFigure(item.what, view, item.layers, plan.batch, head, plan.colormap, settings.log_scale);
  figure.cell_px = plan.cell_px;
  if (!view.model.empty()) figure.title += " \u00b7 " + view.model;  // whose attention: the model (or bundle.json's)
  if (!tiled_window) cropFigure(figure, view.tiled ? CellWindow{} : window);
  std::string base_name = exportBaseName(item.what, item.name_layers, item.head, plan.batch, plan.mask_name,
                                         view.mapL(), view.mapS(), tiled_window || !view.tiled ? window : CellWindow{});
  // A tiled source's whole map is its overview: named so.
  if (view.tiled && !tiled_window) base_name += "_overview" + std::to_string(view.L) + "x" + std::to_string(view.S);
  // The atlas' pictures stay printable (kMaxAtlasSide) unless full resolution is asked for.
  const std::optional<Figure> image =
      item.what == "grid" && !request.full_resolution ? capFigureSize(figure, kMaxAtlasSide) : std::nullopt;
  FigureJob job = renderJob(base_name, figure, plan.figure_formats, image ? &*image : nullptr);
  job.files.push_back({"json", reopenSettingsJson(settings, view, request, plan, item), {}});
  return job;
}

// The one page of the whole view: attention[_L0,2]_b0_<mask>_L9xS9.html, its settings beside it.
FigureJob htmlJob(const Settings& settings, const ViewModel& view, const ExportRequest& request,
                  const ExportPlan& plan) {
  HtmlRequest page;
  page.layers = plan.layers;
  page.batch = plan.batch;
  page.focus_layer = request.focus.layer;
  page.focus_head = request.focus.head;
  page.colormap = plan.colormap;
  page.log_scale = settings.log_scale;
  page.window = request.window;
  setHtmlCaption(page, settings, view);
  FigureJob job;
  job.base_name = exportBaseName("attention", plan.all_layers ? std::vector<int64_t>{} : plan.layers, -1, plan.batch,
                                 plan.mask_name, view.mapL(), view.mapS());
  job.files.push_back({"html", renderViewHtml(view, page), {}});
  const ExportItem item{"html", {plan.layers[0]}, {}, -1};
  job.files.push_back({"json", reopenSettingsJson(settings, view, request, plan, item), {}});
  return job;
}

}  // namespace

std::vector<std::string> exportFigures(const Settings& settings, const ViewModel& shown_view,
                                       const ExportRequest& request) {
  checkNames(request.what, exportWhatNames(), "figure");
  const std::optional<ViewModel> extended = withAcrossLayerMaps(shown_view, request.what);
  const ViewModel& view = extended ? *extended : shown_view;
  checkNames(request.formats, exportFormatNames(), "format");
  const ExportPlan plan = planExport(settings, view, request);
  // Render every file in memory first: a bad request or a figure too large fails before
  // anything is written.
  std::vector<FigureJob> jobs;
  for (const ExportItem& item : exportItems(request.what, plan)) jobs.push_back(itemJob(settings, view, request, plan, item));
  if (plan.html) jobs.push_back(htmlJob(settings, view, request, plan));
  return writeJobs(plan.dir, jobs);
}

std::vector<std::string> exportFigureFiles(const Figure& figure, const std::string& base_name,
                                           const std::vector<std::string>& formats, const std::string& json_text,
                                           const std::string& dir) {
  checkNames(formats, exportFormatNames(), "format");
  // A single figure (the A - B map, a patching table): "html" is its table page (renderFigureHtml).
  FigureJob job = renderJob(base_name, figure, formats);
  job.files.push_back({"json", json_text, {}});
  return writeJobs(dir, {job});
}

}  // namespace attnscope
