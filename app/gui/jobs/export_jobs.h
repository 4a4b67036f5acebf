// The export service (issue 4): Ctrl+S the selected heatmap, Ctrl+Shift+S the head
// grid, Ctrl+Shift+H the HTML page (issue 23), Ctrl+Alt+S the window, and the files features
// make themselves (compare's A - B, query focus's bars) through queueExport. Figures go through
// exportFigures() with the app's Settings and trace, so they equal `attnscope export --settings
// <the JSON written beside them>`. Jobs run on the export worker, one at a time, in order; the UI only polls.
#pragma once

#include <string>

#include "gui/shell/app_state.h"

namespace attnscope {

// Queues an export of "probs", "scores", "mask", "grid", "view" (= the selected view) or
// "html" (every layer and head as one interactive page, Ctrl+Shift+H).
// Figures start once the trace is current (no recompute pending), so the settings JSON
// written beside them describes exactly the pixels.
void requestFigureExport(AppState& state, const std::string& what);
// Queues a job a feature made (a figure or JSON of what its view shows).
void queueExport(AppState& state, ExportJob job);
// Queues the window pixels read after the last rendered frame ([height, width], top row first).
void requestScreenshotExport(AppState& state, RgbImage window);

// Once per frame: collects a finished job (toast, state log), starts the next queued one,
// and expires the toast.
void updateExports(AppState& state);

bool exportBusy(const ExportState& exports);

// A message in the corner for a few seconds (longer for an error); also other features' files.
void showToast(AppState& state, std::string text, bool error);  // a job is queued or running

// Blocks until a running job ends (at shutdown, so no file is left half-written).
void finishExports(ExportState& exports);

// State-log keys: export_dir, exporting, export_count, export_full_resolution, last_export, toast.
void exportsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
