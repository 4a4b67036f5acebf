// The export service (issue 4): Ctrl+S the selected heatmap, Ctrl+Shift+S the head
// grid, Ctrl+Shift+H the HTML page (issue 23), Ctrl+Alt+S the window, and the files features
// make themselves (compare's A - B, query focus's bars) through queueExport. Figures go through
// exportFigures() with the app's Settings and trace, so they equal `attnscope export --settings
// <the JSON written beside them>`. Jobs run on the export worker, one at a time, in order; the UI only polls.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gui/jobs/compute_sync.h"
#include "gui/jobs/export_state.h"
#include "gui/shell/view_state.h"

namespace attnscope {

// The service reads only what it is given; a change of its state-log keys sets
// ExportState::log_pending (the shell writes the line).

// Queues an export of "probs", "scores", "mask", "grid", "view" (= the view's map kind) or
// "html" (every layer and head as one interactive page, Ctrl+Shift+H); the focus view's maps
// export its zoomed window. Figures start once the trace is current (no recompute pending),
// so the settings JSON written beside them describes exactly the pixels.
void requestFigureExport(ExportState& exports, const ViewState& view, const std::string& what);
// Queues a job a feature made (a figure or JSON of what its view shows).
void queueExport(ExportState& exports, ExportJob job);
// Queues the window pixels read after the last rendered frame ([height, width], top row first).
void requestScreenshotExport(ExportState& exports, RgbImage window);

// Once per frame: collects a finished job (toast, state log), starts the next queued one
// with the settings, the focus and the view it shows, and expires the toast.
void updateExports(ExportState& exports, const ComputeState& compute, const Settings& settings, const ViewFocus& focus);

bool exportBusy(const ExportState& exports);

// A message in the corner for a few seconds (longer for an error); also other features' files.
void showToast(ExportState& exports, std::string text, bool error);  // a job is queued or running

// Blocks until a running job ends (at shutdown, so no file is left half-written).
void finishExports(ExportState& exports);

// State-log keys: export_dir, exporting, export_count, export_full_resolution, last_export, toast.
void exportsToJson(const ExportState& exports, const Settings& settings, nlohmann::json& line);

}  // namespace attnscope
