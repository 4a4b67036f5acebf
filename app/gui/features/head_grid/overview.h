// The layers x heads overview in the head grid panel: rows = layers, columns = heads, one
// cell per head coloured by one head metric (entropy, previous-token, induction, sink, ...)
// of the focused batch item, sized so that every head fits the panel (144 to 1024 heads).
// Hover previews the head's map in the tooltip; click focuses it. The numbers come from
// analysis/head_overview.h, rebuilt in the update step when the table, batch item or
// metric changes (never in draw code). A model run's overview can also be coloured by the
// ablation sweep (jobs/sweep_worker.h): each head ablated alone, the change in the log-
// probability of the top prediction at the pinned (else last) position; it runs in the
// background with progress and cancel and, once done, becomes the colouring.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/head_overview.h"
#include "gui/jobs/sweep_worker.h"

namespace attnscope {

struct AppState;
struct ViewModel;

// The ablation sweep behind the "ablation effect" colouring.
struct SweepState {
  std::unique_ptr<SweepWorker> worker;  // made at the first sweep
  bool running = false;
  bool mean = false;                     // ablate to the mean (else zero)
  double progress = 0.0;                 // fraction of heads done while running
  double logged_progress = 0.0;          // the last one the state log was told
  std::shared_ptr<const SweepResult> result;  // the last finished sweep (error or cancel included)
};

struct OverviewState {
  std::string metric = "entropy_bits";  // JSON name of the colouring metric
  bool auto_range = false;              // colours span the values' own range, not the metric's fixed one
  HeadOverview data;                    // of the shown head table; empty while it is missing
  uint64_t built_stamp = 0;             // what data was built for (table's view, batch item, metric, range)
  int64_t built_batch = -1;
  std::string built_metric;
  bool built_auto = false;
  int64_t hovered = -1;                 // head n = layer * H + head under the pointer (-1: none)
  SweepState sweep;
  const SweepResult* built_sweep = nullptr;  // the sweep data was built from
  float cell_w = 0, cell_h = 0, gap = 0;  // drawn last frame (state log)
};

// Rebuilds the overview's values when the head table, batch item, metric or range changed.
void updateOverview(AppState& state);
// Starts the ablation sweep on the shown text (the model's loaded weights) / stops it.
void startAblationSweep(AppState& state);
void cancelAblationSweep(AppState& state);
// While a sweep runs: the frame loop keeps drawing its progress.
bool ablationSweepRunning(const AppState& state);
// The overview filling the rest of the current window (the grid panel).
void drawOverview(AppState& state, const ViewModel& view);
// State-log keys: overview {shown, auto, metric, rows, cols, low, high (the values' range), cells,
// cell, hovered, scale {auto, low, high, rule, narrow, warning} (what the colours span),
// sweep {running, progress, mode, done, cancelled, error, position, top, logprob, effect [N][H], text}}.
void overviewToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
