#include "gui/jobs/export_jobs.h"

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <new>
#include <system_error>
#include <utility>

#include "figure/figure.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

constexpr auto kToastTime = std::chrono::seconds(6);
constexpr auto kErrorToastTime = std::chrono::seconds(9);

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
  return text;
}

// The window as a PNG plus the settings JSON beside it; nothing is left when either fails.
std::vector<std::string> saveScreenshot(const Settings& settings, const ViewFocus& focus, const ViewModel* view,
                                        const RgbImage& window) {
  const std::string dir = exportFolder(settings);
  prepareExportFolder(dir);
  const std::string base = freeBaseName(dir, "screenshot_" + timestamp(), {"png", "json"});
  const std::string png = (fs::path(dir) / (base + ".png")).string();
  const std::string json = (fs::path(dir) / (base + ".json")).string();
  writeFileAtomic(png, encodePng(window));
  try {
    writeFileAtomic(json, (view ? exportSettingsJson(settings, focus, *view) : settingsToJson(settings, focus)).dump(2) + "\n");
  } catch (...) {
    std::error_code ignored;
    fs::remove(png, ignored);
    throw;
  }
  return {png, json};
}

// Runs on the export thread: everything it reads is its own copy or immutable (the view model).
ExportOutcome runJob(ExportRun& run, const ExportWorker::Job&) {
  const ExportJob& job = run.job;
  const Settings& settings = run.settings;
  const ViewFocus& focus = run.focus;
  const ViewModel* view = run.view.get();
  ExportOutcome outcome;
  outcome.kind = job.kind;
  try {
    if (job.window) {
      outcome.paths = saveScreenshot(settings, focus, view, *job.window);
    } else if (job.figure) {
      outcome.paths = exportFigureFiles(*job.figure, job.base_name, job.formats, job.json, exportFolder(settings));
    } else if (!job.json.empty()) {
      const std::string dir = exportFolder(settings);
      prepareExportFolder(dir);
      const std::string path = (fs::path(dir) / (freeBaseName(dir, job.base_name, {"json"}) + ".json")).string();
      writeFileAtomic(path, job.json);
      outcome.paths = {path};
    } else {
      ExportRequest request;
      const bool html = job.kind == "html";  // one page of every layer and head, whatever the formats
      request.what = {html ? "probs" : job.kind};
      request.focus = focus;
      request.formats = html ? std::vector<std::string>{"html"} : settings.export_formats;
      request.window = job.zoom;
      request.full_resolution = job.full_resolution;
      // The grid of several layers is the layer x head atlas; any other figure is the focused layer's.
      if (!html && (job.kind != "grid" || view->layers == 1)) request.layers = {focus.layer};
      outcome.paths = exportFigures(settings, *view, request);
    }
  } catch (const InputError& e) {
    outcome.error = e.what();
  } catch (const std::bad_alloc&) {
    outcome.error = "out of memory while exporting " + job.kind;
  } catch (const std::exception& e) {
    outcome.error = e.what();
  }
  return outcome;
}

}  // namespace

void showToast(ExportState& exports, std::string text, bool error) {
  exports.toast = Toast{std::move(text), error,
                      std::chrono::steady_clock::now() + (error ? kErrorToastTime : kToastTime)};
  exports.log_pending = true;
}

namespace {

void finishJob(ExportState& exports, ExportOutcome outcome) {
  ++exports.count;
  if (outcome.error.empty() && !outcome.paths.empty()) {
    std::string text = "Saved to " + fs::path(outcome.paths.front()).parent_path().string() + "/";
    for (const std::string& path : outcome.paths) text += "\n  " + fs::path(path).filename().string();
    showToast(exports, text, false);
  } else {
    showToast(exports, "Export failed: " + outcome.error, true);
  }
  exports.last = std::move(outcome);
  exports.log_pending = true;
}

void startJob(ExportState& e, ExportRun run) {
  e.running_kind = run.job.kind;
  e.started = std::chrono::steady_clock::now();
  if (!e.worker) e.worker = std::make_unique<ExportWorker>(runJob, JobOptions{JobPolicy::Queue});
  e.worker->post(std::move(run));
  e.log_pending = true;
}

}  // namespace

bool exportBusy(const ExportState& exports) { return exports.running() || !exports.queue.empty(); }

void requestFigureExport(ExportState& exports, const ViewState& view, const std::string& what) {
  const std::string kind = what == "view" ? mapKindName(view.map_kind) : what;
  // The focus view's maps export what is on screen: its zoomed window when zoomed (the HTML
  // page stores that window exactly beside its maps).
  const bool focus_map = kind == "probs" || kind == "scores" || kind == "html";
  ExportJob job;
  job.kind = kind;
  job.zoom = focus_map ? view.zoom : CellWindow{};
  job.full_resolution = exports.full_resolution_atlas;
  queueExport(exports, std::move(job));
}

void queueExport(ExportState& exports, ExportJob job) {
  exports.queue.push_back(std::move(job));
  exports.log_pending = true;
}

void requestScreenshotExport(ExportState& exports, RgbImage window) {
  ExportJob job;
  job.kind = "screenshot";
  job.window = std::move(window);
  queueExport(exports, std::move(job));
}

void updateExports(ExportState& e, const ComputeState& c, const Settings& settings, const ViewFocus& focus) {
  const auto now = std::chrono::steady_clock::now();
  if (e.toast && now > e.toast->until) {
    e.toast.reset();
    e.log_pending = true;
  }
  if (e.running()) {
    const std::shared_ptr<const ExportOutcome> outcome = e.worker->poll();
    if (!outcome) return;
    finishJob(e, *outcome);
  }
  if (e.queue.empty()) return;
  if (e.queue.front().kind != "screenshot") {
    // A figure describes the trace of the current settings: wait for a recompute in flight.
    if (c.posted_generation == 0 || c.pending()) return;
    if (!c.error().empty() || !c.view) {
      ExportOutcome outcome;
      outcome.kind = e.queue.front().kind;
      outcome.error = c.error().empty() ? "nothing computed yet" : "the current settings do not compute: " + c.error();
      e.queue.pop_front();
      finishJob(e, std::move(outcome));
      return;
    }
  }
  ExportJob job = std::move(e.queue.front());
  e.queue.pop_front();
  startJob(e, {std::move(job), settings, focus, c.view});
}

void finishExports(ExportState& exports) {
  exports.worker.reset();  // joins the export thread: a running job ends, never half-written
}

void exportsToJson(const ExportState& e, const Settings& settings, nlohmann::json& line) {
  line["export_dir"] = exportFolder(settings);
  line["exporting"] = exportBusy(e);
  line["export_count"] = e.count;
  line["export_full_resolution"] = e.full_resolution_atlas;
  line["last_export"] = nullptr;
  if (e.last) line["last_export"] = {{"kind", e.last->kind}, {"paths", e.last->paths}, {"error", e.last->error}};
  line["toast"] = nullptr;
  if (e.toast) line["toast"] = {{"text", e.toast->text}, {"error", e.toast->error}};
}

}  // namespace attnscope
