// The application's state: small plain structs, each owned once by AppState (one per
// runGui) and passed to the panels by reference.
//   settings  what the user sets (core Settings; saved as JSON)
//   view      which map is focused (layer, head, batch item) and the hovered cell
//   compute   the worker, the job posted last and the latest result
//   compare   the compare view's A - B, cached for its picks
//   query_focus  the query focus bars, cached for the chosen rows
//   layer_maps  rollout / flow being built for the shown view
//   exports   the export queue, the running job, the toast
//   gpu       GL objects and the textures of the latest result
//   ui        overlays, dialogs, keys pressed since the last frame, one-line notices
//   drafts    control-panel fields that may hold invalid input (never written to settings)
//   stepper   the KV-cache stepper panel: open, the step shown, playing
//   persist   where and when the settings are saved
//   script    the state log and widget rectangles (tests, scripting)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "attention/attention.h"
#include "config/model_source.h"
#include "config/settings.h"
#include "gui/jobs/compute_worker.h"
#include "gui/features/exports/export_state.h"
#include "gui/render/gl_resources.h"
#include "gui/jobs/tile_worker.h"
#include "gui/shell/view_state.h"

namespace attnscope {

// A screen rectangle in framebuffer pixels (top-left origin), for the layout log.
struct ScreenRect {
  float x = 0, y = 0, w = 0, h = 0;
  bool operator==(const ScreenRect& o) const { return x == o.x && y == o.y && w == o.w && h == o.h; }
  bool operator!=(const ScreenRect& o) const { return !(*this == o); }
};

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
};

// The zoomed focus view of a tiled source: the window asked for last and the newest tile.
struct ZoomTileState {
  std::unique_ptr<TileWorker> worker;
  TileRequest posted;                      // maps null: nothing asked for
  std::shared_ptr<const WindowTile> tile;  // the newest result (may be an older request's)
  bool pending() const { return posted.maps && (!tile || tile->request != posted); }
  // The tile of the window asked for last; null while it computes or when it failed.
  const WindowTile* ready() const { return posted.maps && !pending() && tile->error.empty() ? tile.get() : nullptr; }
};

// The Variants section's RoPE score-vs-distance curve, recomputed only when d, base or
// style change (ropeDecayCurve), never per frame.
struct RopeDecayCurve {
  int64_t d = 0;
  float base = 0.0f;
  RopeStyle style = RopeStyle::RotateHalf;
  std::vector<float> values;  // distances 0..kRopeDecayDistance
};
inline constexpr int64_t kRopeDecayDistance = 256;
const std::vector<float>& ropeDecayCurve(RopeDecayCurve& curve, int64_t d, float base, RopeStyle style);

// Widest token label of the shown result's batch item, measured once per result (not per
// frame: at L = 2048 that is thousands of text measurements).
struct LabelWidths {
  const void* view = nullptr;  // the ViewModel measured
  int64_t batch_item = -1;
  float query = 0.0f, key = 0.0f;
};

struct UiState {
  struct KeyPress {
    int key = 0;   // GLFW_KEY_*
    int mods = 0;  // GLFW_MOD_*
  };
  std::vector<KeyPress> key_presses;  // since the last frame (a fast tap can fall between frames)
  bool show_help = false;
  bool open_bundle_requested = false;
  std::string bundle_path_input;
  std::string bundle_error;
  bool bundle_modal_open = false;      // drawn this frame (state log)
  bool modal_was_open = false;         // previous frame, to log the change
  bool close_modal_requested = false;  // Escape: close the open-bundle dialog
  bool quit_requested = false;
  // Set from the signal watcher thread (SIGINT/SIGTERM): quit like Ctrl+Q, saving settings.
  std::shared_ptr<std::atomic<bool>> interrupted = std::make_shared<std::atomic<bool>>(false);
  bool item_active = false;            // a widget is held (e.g. a slider being dragged)
  std::vector<ShippedModel> shipped_models;  // assets/models, listed once at start
  std::vector<std::string> opened_models;    // model folders opened this session (Models choice)
  std::string notice;                  // one-line message, e.g. "settings.json ignored: ..."
  std::string window_title;
  RopeDecayCurve rope_curve;
  LabelWidths label_widths;            // focus and compare views' axis labels
};

struct ControlDrafts {
  bool size_by_model_dim = false;  // user types D and H (d = D / H) instead of d
  int64_t typed_model_dim = 64;
  std::string segments_input;
  std::string control_error;       // e.g. "D=100 is not divisible by H=3"
};

// The KV-cache stepper (F5). The step is clamped by setStep only.
struct StepperState {
  bool open = false;
  int64_t step = 0;      // the token fed last: row `step` of the map is the new row
  bool playing = false;  // advances one step every kStepperPlayInterval, stops at the end
  std::chrono::steady_clock::time_point next_step_at;
};
inline constexpr auto kStepperPlayInterval = std::chrono::milliseconds(450);

// Empty paths = do not persist (e.g. under --frames).
struct PersistState {
  std::string settings_save_path;
  std::string view_save_path;  // view.json: the head table's sort, order grid, compare picks
  std::string ini_path;
  bool dirty = false;
  std::chrono::steady_clock::time_point changed_at;
};

// What the focus view drew last frame (state log): the window's first and last row and
// column label drawn (indices into the tokens; -1 = none).
struct FocusAxisDrawn {
  int64_t first_row = -1, last_row = -1, first_col = -1, last_col = -1;
  bool operator==(const FocusAxisDrawn& o) const {
    return first_row == o.first_row && last_row == o.last_row && first_col == o.first_col && last_col == o.last_col;
  }
  bool operator!=(const FocusAxisDrawn& o) const { return !(*this == o); }
};

struct ScriptState {
  std::FILE* state_log = nullptr;
  FocusAxisDrawn focus_axis;          // drawn this frame
  FocusAxisDrawn focus_axis_logged;   // as in the last state-log line
  std::string focus_note;             // a tiled source: the focus view's pooling note drawn this frame
  std::string focus_note_logged;      // as in the last state-log line
  bool pending = false;                              // write one line after this frame
  std::string last_line;                             // last line written (avoid duplicates)
  std::map<std::string, ScreenRect> layout;          // widget rectangles of the last frame
  std::map<std::string, ScreenRect> layout_logged;   // as in the last state-log line
};

// The compare view's result: A - B of the picked maps, recomputed when the picks, the
// batch item or the result change (updateComparison), never per frame.
// The shown settings under another mistake, for a pick's `with` (the same head under two
// settings): run by a second ComputeWorker through the same configure function, off the UI
// thread; posted when the settings or the mistake change.
struct SettingsVariantRun {
  std::unique_ptr<ComputeWorker> worker;   // started on first use
  Settings posted;                         // the variant's settings, as posted
  uint64_t posted_generation = 0;          // 0 = nothing posted
  uint64_t generation = 0;                 // of `view` / `error`
  std::shared_ptr<const ViewModel> view;   // null until it arrives or when it failed
  std::string error;
  bool pending() const { return posted_generation > generation; }
};

struct CompareState {
  SettingsVariantRun variant;
  uint64_t variant_generation = 0;  // the variant result compared
  uint64_t generation = 0;  // result compared (0 = none yet)
  int64_t batch_item = -1;
  MapPick a, b;
  std::string error;        // why there is no comparison ("" when there is one)
  MapComparison comparison; // [L, S] A - B, symmetric range, largest differences
};

// Query focus's result: the chosen rows across every layer and head, recomputed when the
// choice, the batch item or the result change (updateQueryFocus).
struct QueryFocusState {
  uint64_t generation = 0;   // result read (0 = none yet)
  int64_t batch_item = -1;
  QueryFocusView choice;     // what `bars` shows
  Tensor bars;               // [layers, H, S]; empty when no query is chosen
};

// Rollout or flow of the shown view (analysis/layer_maps), built when chosen, off the UI
// thread, into a copy of the view model that then replaces the shown one (updateLayerMaps).
struct LayerMapsState {
  std::future<std::shared_ptr<const ViewModel>> running;  // valid() while one builds
  MapKind kind = MapKind::Rollout;    // what it builds or failed to build
  const ViewModel* source = nullptr;  // the view it extends (identity only)
  std::shared_ptr<std::atomic<double>> progress = std::make_shared<std::atomic<double>>(0.0);  // [0, 1]
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  std::string error;  // why building kind for source failed or stopped ("" = none); not retried
};

struct AppState {
  Settings settings;
  ViewState view;
  ComputeState compute;
  ZoomTileState zoom_tile;
  CompareState compare;
  QueryFocusState query_focus;
  LayerMapsState layer_maps;
  ExportState exports;
  GpuState gpu;
  UiState ui;
  ControlDrafts drafts;
  StepperState stepper;
  PersistState persist;
  ScriptState script;
};

// True when a and b differ in a field that changes the computed trace (view-only
// fields such as colormap and log scale do not count).
bool computeSettingsDiffer(const Settings& a, const Settings& b);

// The view model the views show: the latest one, or the mistakes lab's correct run when
// the buggy run crashed (then it is the only one to navigate). Null before any result.
const ViewModel* shownView(const AppState& state);
// The head table of the shown view; null while it is missing (or belongs to an older view).
const HeadTable* shownHeadTable(const AppState& state);
// Recomputes view.table.order when the table, batch item or sort changed (not per frame).
void updateHeadOrder(AppState& state);
// The head grid wraps in the table's order ("order grid by table", a table shown, and the
// attention maps chosen rather than rollout / flow): arrow keys then follow that order.
bool gridFollowsTable(const AppState& state);

// [layers, B, H] of the shown result.
FocusLimits focusLimits(const AppState& state);
// The one way to move the focus: clamped to focusLimits, saved with the settings, logged.
void setFocus(AppState& state, ViewFocus wanted);

// The one way to move the stepper: clamped to [0, L - 1] of the decoding (0 without one).
void setStep(AppState& state, int64_t step);
// Opens or closes the stepper panel (F5); closing stops play.
void toggleStepper(AppState& state);
// Model runs: the query position the predictions panel shows (the hovered row, else the
// clicked one, else the last) and why; -1 when the shown result has no predictions.
struct PredictionPosition {
  int64_t position = -1;
  const char* why = "";  // "hovered", "clicked", "last position"
};
PredictionPosition predictionPosition(const AppState& state);

// The mistakes lab's one-line comparison for the focused head and batch item, e.g.
// "max |Δp| = 0.43 over head 1 (all heads: 0.51, head 3)"; "" when no correct trace.
std::string mistakeDiffSummary(const AppState& state);
// The focused head's max |buggy - correct| probability; -1 when not available.
float focusedDiffMax(const AppState& state);

// The one way to change the focus view's zoom window: clamped to the shown result's
// [L, S] (whole map before any result), logged, not saved.
void setZoom(AppState& state, CellWindow wanted);

// Records a widget rectangle (ImGui's last item) for the layout log.
void recordLayout(AppState& state, const std::string& name);
void recordLayoutRect(AppState& state, const std::string& name, float x, float y, float w,
                      float h);

// Marks the visible state as changed so one state-log line is written after this frame.
inline void markStateChanged(AppState& state) { state.script.pending = true; }
// Schedules the debounced save of settings and focus, and a state-log line.
void saveLater(AppState& state);
// Call after the user edited state.settings.
inline void settingsEdited(AppState& state) { saveLater(state); }

}  // namespace attnscope
