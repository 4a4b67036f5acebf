// The compare view (the focus panel's "Compare" tab): default picks, the one clamp of the
// picks to the shown result, and A - B (with its texture) recomputed only when the picks,
// the batch item or the result change.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

#include "analysis/compare.h"
#include "tensor/tensor.h"
#include "config/settings.h"
#include "gui/jobs/compute_worker.h"
#include "gui/shell/view_state.h"

namespace attnscope {

struct AppState;

// The compare view's result: A - B of the picked maps, recomputed when the picks, the
// batch item or the result change (updateComparison), never per frame.
// The shown settings under another mistake, for a pick's `with` (the same head under two
// settings): run by a second ComputeWorker through the same configure function, off the UI
// thread; posted when the settings or the mistake change.
struct SettingsVariantRun {
  std::unique_ptr<ComputeWorker> worker;   // started on first use
  Settings posted;                         // the variant's settings, as posted
  uint64_t posted_generation = 0;          // 0 = nothing posted
  std::shared_ptr<const ComputeResult> result;  // the newest result (null until one arrives)
  uint64_t generation() const { return result ? result->generation : 0; }
  // null until it arrives or when it failed
  const ViewModel* view() const { return result ? result->view.get() : nullptr; }
  std::string error() const { return result ? result->error : ""; }
  bool pending() const { return posted_generation > generation(); }
};

// B from another file of the shown trained model (F16 vs Q4_K_M): the same settings run on that
// file by the variant worker, and the drift of every head (analysis/drift.h) for the overview.
struct OtherFile {
  std::string input;  // the path box
  std::string path;   // the file compared ("" = none chosen)
  Tensor max_abs, js;  // [layers, H] drift of this run against the file's (empty until both ran)
  uint64_t generation = 0, variant_generation = 0;  // the runs the drift was measured on
  int64_t batch_item = -1;
  bool show_js = false;  // the overview's colour: Jensen-Shannon instead of max |A - B|
};

struct CompareState {  SettingsVariantRun variant;  // B's mistake, or B's other file (never both: sandbox vs model)
  OtherFile other;
  uint64_t variant_generation = 0;  // the variant result compared
  uint64_t generation = 0;  // result compared (0 = none yet)
  int64_t batch_item = -1;
  MapPick a, b;
  std::string error;        // why there is no comparison ("" when there is one)
  MapComparison comparison; // [L, S] A - B, symmetric range, largest differences
};


// B can be the same settings under another mistake (a second run) for the core's own runs
// (not trained models, not imported maps).
bool settingsVariantsPossible(const AppState& state);
// B can be another file of the shown trained model.
bool otherFilePossible(const AppState& state);
// A and B become the focused head of this run and of `path` (the variant run computes it).
void compareWithOtherFile(AppState& state, const std::string& path);
// The view model a pick reads: this run (the shown view), the mistakes lab's correct run, or
// the settings variant; null when that run is missing, still running or its maps have
// other sizes than this run's.
const ViewModel* pickedView(const AppState& state, const MapPick& pick);
// "layer 1, head 2 (correct run)" (the layer only with several), "head 0 (with no-scaling)".
std::string pickName(const ViewModel& view, const MapPick& pick);
// The texture of a pick's probability map for the focused batch item (0 when missing).
unsigned int pickedTexture(const AppState& state, const MapPick& pick);

void updateComparison(AppState& state);
// Queues A - B as PNG + .npy [L, S] float32 + a JSON naming A and B (README: "Compare and
// query focus exports").
void requestDifferenceExport(AppState& state);
void drawComparePanel(AppState& state);
// State-log keys: compare, compare_variant, compare_other ({path, pending, error, measure, drift
// [layers][H] of the shown measure, max_abs_max, js_max}).
void compareToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
