#include "gui/export_jobs.h"

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
std::vector<std::string> saveScreenshot(const Settings& settings, const RgbImage& window) {
  const std::string dir = exportFolder(settings);
  prepareExportFolder(dir);
  const std::string base = freeBaseName(dir, "screenshot_" + timestamp(), {"png", "json"});
  const std::string png = (fs::path(dir) / (base + ".png")).string();
  const std::string json = (fs::path(dir) / (base + ".json")).string();
  writeFileAtomic(png, encodePng(window));
  try {
    writeFileAtomic(json, settingsToJson(settings).dump(2) + "\n");
  } catch (...) {
    std::error_code ignored;
    fs::remove(png, ignored);
    throw;
  }
  return {png, json};
}

// Runs on the export thread: everything it reads is its own copy or immutable (the view model).
ExportOutcome runJob(const ExportJob& job, const Settings& settings, ViewFocus focus,
                     std::shared_ptr<const ViewModel> view) {
  ExportOutcome outcome;
  outcome.kind = job.kind;
  try {
    if (job.window) {
      outcome.paths = saveScreenshot(settings, *job.window);
    } else {
      ExportRequest request;
      request.what = {job.kind};
      request.focus = focus;
      request.formats = settings.export_formats;
      request.window = job.zoom;
      // The grid of several layers is the layer x head atlas; any other figure is the focused layer's.
      if (job.kind != "grid" || view->layers == 1) request.layers = {focus.layer};
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

void showToast(AppState& state, std::string text, bool error) {
  state.exports.toast = Toast{std::move(text), error,
                      std::chrono::steady_clock::now() + (error ? kErrorToastTime : kToastTime)};
  markStateChanged(state);
}

void finishJob(AppState& state, ExportOutcome outcome) {
  ++state.exports.count;
  if (outcome.error.empty() && !outcome.paths.empty()) {
    std::string text = "Saved to " + fs::path(outcome.paths.front()).parent_path().string() + "/";
    for (const std::string& path : outcome.paths) text += "\n  " + fs::path(path).filename().string();
    showToast(state, text, false);
  } else {
    showToast(state, "Export failed: " + outcome.error, true);
  }
  state.exports.last = std::move(outcome);
  markStateChanged(state);
}

void startJob(AppState& state, ExportJob job) {
  ExportState& e = state.exports;
  e.running_kind = job.kind;
  e.started = std::chrono::steady_clock::now();
  e.running = std::async(std::launch::async, runJob, std::move(job), state.settings, state.view.focus,
                         state.compute.view);
  markStateChanged(state);
}

}  // namespace

bool exportBusy(const ExportState& exports) { return exports.running.valid() || !exports.queue.empty(); }

void requestFigureExport(AppState& state, const std::string& what) {
  const std::string kind = what == "view" ? mapKindName(state.exports.selected) : what;
  // The focus view's maps export what is on screen: its zoomed window when zoomed.
  const bool focus_map = kind == "probs" || kind == "scores";
  state.exports.queue.push_back({kind, std::nullopt, focus_map ? state.view.zoom : CellWindow{}});
  markStateChanged(state);
}

void requestScreenshotExport(AppState& state, RgbImage window) {
  state.exports.queue.push_back({"screenshot", std::move(window), {}});
  markStateChanged(state);
}

void updateExports(AppState& state) {
  ExportState& e = state.exports;
  const ComputeState& c = state.compute;
  const auto now = std::chrono::steady_clock::now();
  if (e.toast && now > e.toast->until) {
    e.toast.reset();
    markStateChanged(state);
  }
  if (e.running.valid()) {
    if (e.running.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    finishJob(state, e.running.get());
  }
  if (e.queue.empty()) return;
  if (e.queue.front().kind != "screenshot") {
    // A figure describes the trace of the current settings: wait for a recompute in flight.
    if (c.posted_generation == 0 || c.pending()) return;
    if (!c.error.empty() || !c.view) {
      ExportOutcome outcome;
      outcome.kind = e.queue.front().kind;
      outcome.error = c.error.empty() ? "nothing computed yet" : "the current settings do not compute: " + c.error;
      e.queue.pop_front();
      finishJob(state, std::move(outcome));
      return;
    }
  }
  ExportJob job = std::move(e.queue.front());
  e.queue.pop_front();
  startJob(state, std::move(job));
}

void finishExports(ExportState& exports) {
  if (exports.running.valid()) exports.running.wait();
}

}  // namespace attnscope
