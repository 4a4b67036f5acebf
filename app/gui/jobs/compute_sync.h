// Between the UI thread and the compute worker: post a job when a compute-relevant
// setting changed (never per frame), take the newest result when it is ready.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/kv_cache.h"
#include "config/settings.h"
#include "gui/jobs/compute_worker.h"

namespace attnscope {

struct AppState;

struct ComputeState {
  std::unique_ptr<ComputeWorker> worker;
  // the job posted last
  Settings posted_settings;
  uint64_t posted_generation = 0;  // 0 = nothing posted yet
  std::chrono::steady_clock::time_point posted_at;
  bool busy = false;               // a recompute has run > ~100 ms: spinner shown
  double progress = -1.0;          // a tiled overview in progress: fraction done (whole percents); < 0 otherwise
  bool cancelled = false;          // the latest job was cancelled: the maps shown are older
  // the latest result
  std::shared_ptr<const ViewModel> view;  // latest successful result: what every view reads
  uint64_t trace_generation = 0;
  std::string error;               // InputError of the latest job ("" = ok)
  InputFacts facts;                // sizes of the latest job's inputs
  double compute_ms = 0.0;
  int64_t runs = 0;                // attention runs the worker has done (incremental checks)
  bool projections_reused = false; // the latest job reused the previous projections
  bool raw_scores_reused = false;  // ... and took every raw score Q K^T from the cache
  // Mistakes lab: the latest job's settings run without the mistake (null when no mistake
  // or when the inputs themselves failed); shown even when the buggy run threw.
  std::shared_ptr<const ViewModel> correct_view;
  Tensor prob_diff_max;            // [B, H] max |buggy - correct| probability; empty = n/a
  // KV-cache stepper: jobs decode too while the stepper is open (posted_decode).
  bool posted_decode = false;
  std::shared_ptr<const KvCacheRun> decode;  // null when not asked for or not decodable
  std::vector<float> decode_row_diff;        // [L] max |decoded row - full row| per step
  std::string decode_error;                  // why the settings cannot be decoded
  std::shared_ptr<const HeadTable> head_table;  // metrics and groups of the shown view; may be stale or null

  bool pending() const { return posted_generation > trace_generation; }
  // The core's trace behind the view (pipeline, mask components, tooltips); null for
  // imported maps.
  const AttentionTrace* trace() const { return view ? view->trace.get() : nullptr; }
  const AttentionTrace* correctTrace() const { return correct_view ? correct_view->trace.get() : nullptr; }
  // Maps computed elsewhere: no model to recompute (mask, scale, heads are fixed).
  bool imported() const { return view && view->source == ViewSource::Imported; }
  // The maps on screen are an older result: the latest recompute failed (error says why).
  // Not in the mistakes lab's case of a buggy run that threw: its correct run is shown.
  bool mapsStale() const { return (!error.empty() || cancelled) && view && !correct_view; }
  // The latest job failed because a trained model's text is longer than its context: the
  // message is shown once, under the text box; the maps only say they are out of date.
  bool textTooLong() const { return !error.empty() && facts.context > 0 && facts.text_tokens > facts.context; }
};

// True when a and b differ in a field that changes the computed trace (view-only
// fields such as colormap and log scale do not count).
bool computeSettingsDiffer(const Settings& a, const Settings& b);

// Takes the worker's newest result, if any, and clamps the focus to it.
void receiveResult(AppState& state);
// Posts the settings when they differ from the last posted job's (or nothing was posted).
void postIfSettingsChanged(AppState& state);
// Shows the spinner once a recompute has run for ~100 ms; follows a tiled overview's progress.
void updateBusy(AppState& state);
// Stops a tiled overview in progress (Cancel button, Escape); the maps shown stay, marked stale.
void cancelCompute(AppState& state);
// Posts the settings again, changed or not (after a cancel).
void recomputeNow(AppState& state);

// State-log keys: generation, pending, error, maps_stale, busy, progress, cancelled, compute_runs, projections_reused, raw_scores_reused, compute_ms; the shown result's sizes, variants and mask components.
void computeToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
