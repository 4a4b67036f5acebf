// The application's state: small plain structs, each owned once by AppState (one per
// runGui) and passed to the panels by reference. The shell's own state and what several
// features share are members; each feature's own struct is declared in its header under
// features/ (with its update step, drawing and state-log JSON) and owned by `features`,
// found by its type (state.feature<StepperState>()), so this header names no feature.
//   settings  what the user sets (core Settings; saved as JSON)
//   view      which map is focused (layer, head, batch item), the hovered cell, the pin, the zoom
//   compute   the worker, the job posted last and the latest result
//   exports   the export service: its queue, the running job, the toast
//   gpu       GL objects and the textures of the latest result
//   ui        overlays, keys pressed since the last frame, one-line notices
//   drafts    control-panel fields that may hold invalid input (read by the shape pipeline too)
//   head_scroll  the head table and grid keeping the focused head in view (shared by both)
//   persist   where and when the settings are saved
//   script    the state log and widget rectangles (tests, scripting)
//   features  every feature's own state
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/model_source.h"
#include "config/settings.h"
#include "model/interventions.h"
#include "gui/jobs/compute_sync.h"
#include "gui/jobs/export_state.h"
#include "gui/render/gl_resources.h"
#include "gui/render/heatmap_widget.h"
#include "gui/render/widget_rects.h"
#include "gui/shell/feature_states.h"
#include "gui/shell/head_scroll.h"
#include "gui/shell/persistence.h"
#include "gui/shell/view_state.h"

namespace attnscope {


// Control-panel fields that may hold invalid input (never written to settings); the shape
// pipeline shows a typed D the heads do not divide.
struct ControlDrafts {
  bool size_by_model_dim = false;  // user types D and H (d = D / H) instead of d
  int64_t typed_model_dim = 64;
  std::string segments_input;
  std::string control_error;       // e.g. "D=100 is not divisible by H=3"
  int edited_section = -1;         // the section last edited (the run's error shows under it); -1: none yet
};

// A key pressed, queued until the next frame's shortcuts (shell/shortcuts.cpp).
struct KeyPress {
  int key = 0;   // GLFW_KEY_*
  int mods = 0;  // GLFW_MOD_*
};

struct UiState {
  std::vector<KeyPress> key_presses;  // since the last frame (a fast tap can fall between frames)
  bool show_help = false;
  bool open_requested = false;         // Ctrl+O or a button: open the Ctrl+O dialog next frame
  bool quit_requested = false;
  // Set from the signal watcher thread (SIGINT/SIGTERM): quit like Ctrl+Q, saving settings.
  std::shared_ptr<std::atomic<bool>> interrupted = std::make_shared<std::atomic<bool>>(false);
  bool item_active = false;            // a widget is held (e.g. a slider being dragged)
  std::vector<ShippedModel> shipped_models;  // assets/models, listed once at start
  std::string notice;                  // one-line message, e.g. "settings.json ignored: ..."
  std::string window_title;
  LabelWidths label_widths;            // focus and compare views' axis labels
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
  WidgetRects layout;                                // widget rectangles of the last frame
  std::map<std::string, ScreenRect> layout_logged;   // as in the last state-log line
  std::map<std::string, ScreenRect> clips_logged;    // (scroll ranges settle a frame late)
};

struct AppState {
  Settings settings;
  ViewState view;
  ComputeState compute;
  ExportState exports;
  GpuState gpu;
  UiState ui;
  ControlDrafts drafts;
  HeadScrollState head_scroll;
  PersistState persist;
  ScriptState script;
  FeatureStates features;

  // A feature's own state (features/<name>/<name>.h declares T).
  template <typename T>
  T& feature() {
    return features.get<T>();
  }
  template <typename T>
  const T& feature() const {
    return features.get<T>();
  }
};

// The view model the views show: the latest one, or the mistakes lab's correct run when
// the buggy run crashed (then it is the only one to navigate). Null before any result.
const ViewModel* shownView(const AppState& state);

// [layers, B, H] of the shown result.
FocusLimits focusLimits(const AppState& state);
// The one way to move the focus: clamped to focusLimits, saved with the settings, logged.
void setFocus(AppState& state, ViewFocus wanted);

// The one way to change the focus view's zoom window: clamped to the shown result's
// [L, S] (whole map before any result), logged, not saved.
void setZoom(AppState& state, CellWindow wanted);

// The head table of the shown view; null while it is missing (or belongs to an older view).
const HeadTable* shownHeadTable(const AppState& state);
// The head grid wraps in the table's order ("order grid by table", a table shown, and the
// attention maps chosen rather than rollout / flow): arrow keys then follow that order.
bool gridFollowsTable(const AppState& state);

// The mistakes lab's one-line comparison for the focused head and batch item, e.g.
// "max |Δp| = 0.43 over head 1 (all heads: 0.51, head 3)"; "" when no correct trace.
std::string mistakeDiffSummary(const AppState& state);
// The focused head's max |buggy - correct| probability; -1 when not available.
float focusedDiffMax(const AppState& state);

// The head grid shows its layers x heads overview for this view (the user's choice, else
// more than kOverviewAutoHeads heads).
bool overviewShown(const AppState& state, const ViewModel& view);

// Click a query token: choose only it; Ctrl+click: add it to (or take it out of) the choice.
void chooseQuery(AppState& state, int64_t query, bool add);

// Pins the predictions to query row `row` of the current text; unpins (follows the end of
// the text again).
void pinQueryRow(AppState& state, int64_t row);
void unpinQueryRow(AppState& state);

// What the next compute job asks for beyond the settings, from each feature that wants
// something (the stepper's decoding, the lens, the predictions' rows; a draft holds it).
ComputeAsk computeAsk(const AppState& state);
// Posts the settings again, changed or not, with what the features ask (after a cancel, or
// when an edited text ends a generation whose settings were already posted).
void recompute(AppState& state);
// After receiveResult took a result: the focus and each feature clamp to it (the registry,
// shell/feature_registry.cpp).
void followResult(AppState& state);

// Marks the visible state as changed so one state-log line is written after this frame.
inline void markStateChanged(AppState& state) { state.script.pending = true; }
// Schedules the debounced save of settings and focus, and a state-log line.
void saveLater(AppState& state);
// The one way the app changes a model's interventions (settings model_ablate, model_knockout):
// rerun, saved, logged.
void setModelInterventions(AppState& state, const Interventions& interventions);
// Sets head (layer, head)'s own ablation item (nullopt: removes it; an ablation of its whole
// layer, "L3H*", stays): the focus view's, the tiles' and the head table's toggles.
void setHeadAblation(AppState& state, int64_t layer, int64_t head, std::optional<AblationMode> mode);
// Call after the user edited state.settings.
inline void settingsEdited(AppState& state) { saveLater(state); }

}  // namespace attnscope
