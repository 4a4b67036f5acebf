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

// Runs on the export thread: everything it reads is its own copy or immutable (the trace).
ExportOutcome runJob(const ExportJob& job, const Settings& settings, std::shared_ptr<const AttentionTrace> trace) {
  ExportOutcome outcome;
  outcome.kind = job.kind;
  try {
    if (job.window) {
      outcome.paths = saveScreenshot(settings, *job.window);
    } else {
      ExportRequest request;
      request.what = {job.kind};
      request.heads = {settings.focused_head};
      request.formats = settings.export_formats;
      outcome.paths = exportFigures(settings, *trace, request);
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
  state.toast = Toast{std::move(text), error,
                      std::chrono::steady_clock::now() + (error ? kErrorToastTime : kToastTime)};
  markStateChanged(state);
}

void finishJob(AppState& state, ExportOutcome outcome) {
  ++state.export_count;
  if (outcome.error.empty() && !outcome.paths.empty()) {
    std::string text = "Saved to " + fs::path(outcome.paths.front()).parent_path().string() + "/";
    for (const std::string& path : outcome.paths) text += "\n  " + fs::path(path).filename().string();
    showToast(state, text, false);
  } else {
    showToast(state, "Export failed: " + outcome.error, true);
  }
  state.last_export = std::move(outcome);
  markStateChanged(state);
}

void startJob(AppState& state, ExportJob job) {
  state.export_running_kind = job.kind;
  state.export_started = std::chrono::steady_clock::now();
  state.export_running = std::async(std::launch::async, runJob, std::move(job), state.settings, state.trace);
  markStateChanged(state);
}

}  // namespace

bool exportBusy(const AppState& state) { return state.export_running.valid() || !state.export_queue.empty(); }

void requestFigureExport(AppState& state, const std::string& what) {
  state.export_queue.push_back({what == "view" ? exportViewName(state.export_view) : what, std::nullopt});
  markStateChanged(state);
}

void requestScreenshotExport(AppState& state, RgbImage window) {
  state.export_queue.push_back({"screenshot", std::move(window)});
  markStateChanged(state);
}

void updateExports(AppState& state) {
  const auto now = std::chrono::steady_clock::now();
  if (state.toast && now > state.toast->until) {
    state.toast.reset();
    markStateChanged(state);
  }
  if (state.export_running.valid()) {
    if (state.export_running.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    finishJob(state, state.export_running.get());
  }
  if (state.export_queue.empty()) return;
  if (state.export_queue.front().kind != "screenshot") {
    // A figure describes the trace of the current settings: wait for a recompute in flight.
    if (state.posted_generation == 0 || state.posted_generation > state.trace_generation) return;
    if (!state.error.empty() || !state.trace) {
      ExportOutcome outcome;
      outcome.kind = state.export_queue.front().kind;
      outcome.error = state.error.empty() ? "nothing computed yet" : "the current settings do not compute: " + state.error;
      state.export_queue.pop_front();
      finishJob(state, std::move(outcome));
      return;
    }
  }
  ExportJob job = std::move(state.export_queue.front());
  state.export_queue.pop_front();
  startJob(state, std::move(job));
}

void finishExports(AppState& state) {
  if (state.export_running.valid()) state.export_running.wait();
}

}  // namespace attnscope
