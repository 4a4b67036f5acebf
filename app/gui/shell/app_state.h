// The application's state: small plain structs, each owned once by AppState (one per
// runGui) and passed to the panels by reference. Each feature's struct is declared in its
// own header under features/ (with its update step, drawing and state-log JSON).
//   settings  what the user sets (core Settings; saved as JSON)
//   view      which map is focused (layer, head, batch item) and the hovered cell
//   compute   the worker, the job posted last and the latest result
//   compare   the compare view's A - B, cached for its picks
//   query_focus  the query focus bars, cached for the chosen rows
//   layer_maps  rollout / flow being built for the shown view
//   overview  the head grid's layers x heads overview: shown or not, its metric and values
//   exports   the export queue, the running job, the toast
//   gpu       GL objects and the textures of the latest result
//   ui        overlays, dialogs, keys pressed since the last frame, one-line notices
//   open_dialog  the Ctrl+O dialog
//   panel_borders  the border between panels being dragged
//   drafts    control-panel fields that may hold invalid input (never written to settings)
//   stepper   the KV-cache stepper panel: open, the step shown, playing
//   predictions  the predictions panel's pin (a clicked query row)
//   lens      the logit lens tab: shown, the hovered and the clicked cell
//   head_scroll  the head table and grid keeping the focused head in view
//   generate  the Generate control: its worker, the newest snapshot, Ctrl+S bundles
//   persist   where and when the settings are saved
//   script    the state log and widget rectangles (tests, scripting)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/model_source.h"
#include "config/settings.h"
#include "gui/features/compare/compare.h"
#include "gui/features/controls/controls.h"
#include "gui/jobs/export_state.h"
#include "gui/features/focus/focus.h"
#include "gui/features/generate/generate.h"
#include "gui/features/head_grid/head_grid.h"
#include "gui/features/head_scroll/head_scroll.h"
#include "gui/features/layer_maps/layer_maps.h"
#include "gui/features/lens/lens.h"
#include "gui/features/mask/mask.h"
#include "gui/features/metrics/metrics.h"
#include "gui/features/open/open_dialog.h"
#include "gui/features/overview/overview.h"
#include "gui/features/panel_borders/panel_borders.h"
#include "gui/features/persistence/persistence.h"
#include "gui/features/pipeline/pipeline.h"
#include "gui/features/predictions/predictions.h"
#include "gui/features/query_focus/query_focus.h"
#include "gui/features/stepper/stepper.h"
#include "gui/jobs/compute_sync.h"
#include "gui/render/gl_resources.h"
#include "gui/render/heatmap_widget.h"
#include "gui/render/widget_rects.h"
#include "gui/shell/view_state.h"

namespace attnscope {


struct UiState {
  struct KeyPress {
    int key = 0;   // GLFW_KEY_*
    int mods = 0;  // GLFW_MOD_*
  };
  std::vector<KeyPress> key_presses;  // since the last frame (a fast tap can fall between frames)
  bool show_help = false;
  bool quit_requested = false;
  // Set from the signal watcher thread (SIGINT/SIGTERM): quit like Ctrl+Q, saving settings.
  std::shared_ptr<std::atomic<bool>> interrupted = std::make_shared<std::atomic<bool>>(false);
  bool item_active = false;            // a widget is held (e.g. a slider being dragged)
  std::vector<ShippedModel> shipped_models;  // assets/models, listed once at start
  std::string notice;                  // one-line message, e.g. "settings.json ignored: ..."
  std::string window_title;
  RopeDecayCurve rope_curve;
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
  ZoomTileState zoom_tile;
  CompareState compare;
  QueryFocusState query_focus;
  LayerMapsState layer_maps;
  OverviewState overview;
  ExportState exports;
  OpenDialogState open_dialog;
  PanelBordersState panel_borders;
  GpuState gpu;
  UiState ui;
  ControlDrafts drafts;
  StepperState stepper;
  PredictionsState predictions;
  LensState lens;
  HeadScrollState head_scroll;
  GenerateState generate;
  PersistState persist;
  ScriptState script;
};

// The view model the views show: the latest one, or the mistakes lab's correct run when
// the buggy run crashed (then it is the only one to navigate). Null before any result.
const ViewModel* shownView(const AppState& state);

// [layers, B, H] of the shown result.
FocusLimits focusLimits(const AppState& state);
// The one way to move the focus: clamped to focusLimits, saved with the settings, logged.
void setFocus(AppState& state, ViewFocus wanted);

// Pins the predictions to query row `row` of the current text; unpins (follows the end of
// the text again).
void pinQueryRow(AppState& state, int64_t row);
void unpinQueryRow(AppState& state);

// What the next compute job asks for beyond the settings, from each feature that wants
// something (the stepper's decoding, the lens, the predictions' rows; a draft holds it).
ComputeAsk computeAsk(const AppState& state);
// After receiveResult took a result: the focus and each feature clamp to it (the registry,
// shell/feature_registry.cpp).
void followResult(AppState& state);

// Marks the visible state as changed so one state-log line is written after this frame.
inline void markStateChanged(AppState& state) { state.script.pending = true; }
// Schedules the debounced save of settings and focus, and a state-log line.
void saveLater(AppState& state);
// Call after the user edited state.settings.
inline void settingsEdited(AppState& state) { saveLater(state); }

}  // namespace attnscope
