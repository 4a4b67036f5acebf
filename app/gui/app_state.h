// The one application state: settings, the latest trace, GPU copies of it, what the
// pointer hovers, and UI flags. Owned by runGui(); every panel takes it by reference.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "view/colormap.h"
#include "figure/figure.h"
#include "gui/compute_worker.h"
#include "config/settings.h"

namespace attnscope {

// A screen rectangle in framebuffer pixels (top-left origin), for the layout log.
struct ScreenRect {
  float x = 0, y = 0, w = 0, h = 0;
  bool operator==(const ScreenRect& o) const { return x == o.x && y == o.y && w == o.w && h == o.h; }
  bool operator!=(const ScreenRect& o) const { return !(*this == o); }
};

// GL objects that live as long as the window (GLuint == unsigned int; no GL header here).
struct GlResources {
  unsigned int heatmap_program = 0;
  int loc_projection = -1, loc_values = -1, loc_colormap = -1, loc_range_low = -1,
      loc_range_high = -1, loc_log_scale = -1, loc_masked_color = -1, loc_masked_hatch = -1;
  unsigned int colormap_luts[4] = {0, 0, 0, 0};  // 256x1 RGB8, indexed by Colormap
};

// What the heatmap shader needs for one draw; lives until the frame is rendered.
struct HeatmapDrawParams {
  const GlResources* gl = nullptr;
  unsigned int lut = 0;
  float range_low = 0, range_high = 1;  // log10 units when log_scale
  bool log_scale = false;
};

// GPU copies of the current trace for one batch item; rebuilt only when a new trace
// arrives or the batch item changes. Masked cells are -inf in every texture.
struct TraceTextures {
  const AttentionTrace* source = nullptr;  // the trace these were built from
  int64_t batch_item = -1;
  std::vector<unsigned int> probs;         // per head: R32F [L, S] probabilities shown
  std::vector<unsigned int> scores;        // per head: R32F [L, S] scaled scores
  unsigned int mask = 0;                   // R32F [L, S]: 1 allowed, -inf blocked
  std::vector<unsigned int> components;    // per mask component, same encoding
  float prob_max = 1.0f;                   // largest shown probability over all heads
  float prob_min_positive = 1e-6f;         // smallest positive one (log scale floor)
  std::vector<float> score_abs_max;        // per head: max |finite allowed score|
  int64_t allowed_cells = 0;               // combined mask, this batch item
  int64_t fully_masked_rows = 0;
  std::vector<int64_t> component_allowed;  // per component
};

// GPU copies of the mistakes lab's correct trace: probabilities only, same rules as
// TraceTextures (rebuilt only when a new correct trace arrives or the batch item changes).
struct CorrectTextures {
  const AttentionTrace* source = nullptr;
  int64_t batch_item = -1;
  std::vector<unsigned int> probs;  // per head: R32F [L, S] shown probabilities, masked -inf
  float prob_max = 1.0f;
  float prob_min_positive = 1e-6f;
};

// The cell under the pointer, shared by the score, probability and mask views and the
// head grid (crosshair). row = query index i, col = key index j.
struct HoverCell {
  int64_t row = -1, col = -1;
  bool valid() const { return row >= 0 && col >= 0; }
  bool operator==(const HoverCell& o) const { return row == o.row && col == o.col; }
  bool operator!=(const HoverCell& o) const { return !(*this == o); }
};

// The heatmap Ctrl+S exports: the one the user last clicked (probabilities by default).
enum class ExportView { Probs, Scores, Mask };
const char* exportViewName(ExportView view);  // "probs", "scores", "mask" (exportFigures names)

// One export the user asked for: a figure of the selected view, the head grid, or the
// window as it was on screen (pixels read right after that frame was rendered).
struct ExportJob {
  std::string kind;                // "probs", "scores", "mask", "grid" or "screenshot"
  std::optional<RgbImage> window;  // screenshot pixels [height, width]
};

struct ExportOutcome {
  std::string kind;
  std::vector<std::string> paths;  // files written (figures, then the settings JSON)
  std::string error;               // one line; "" on success (then no file was left behind)
};

// A message in the bottom-right corner for a few seconds.
struct Toast {
  std::string text;
  bool error = false;
  std::chrono::steady_clock::time_point until;
};

struct AppState {
  Settings settings;

  // compute
  std::unique_ptr<ComputeWorker> worker;
  Settings posted_settings;          // settings of the last posted job
  uint64_t posted_generation = 0;    // 0 = nothing posted yet
  std::chrono::steady_clock::time_point posted_at;
  std::shared_ptr<const AttentionTrace> trace;  // latest successful result
  uint64_t trace_generation = 0;
  std::string error;                 // InputError of the latest job ("" = ok)
  InputFacts facts;                  // sizes of the latest job's inputs
  double compute_ms = 0.0;
  // Mistakes lab: the latest job's settings run without the mistake (null when no mistake
  // or when the inputs themselves failed); shown even when the buggy run threw.
  std::shared_ptr<const AttentionTrace> correct_trace;
  Tensor prob_diff_max;              // [B, H] max |buggy - correct| probability; empty = n/a

  // GPU
  GlResources gl;
  TraceTextures textures;
  CorrectTextures correct_textures;
  std::deque<HeatmapDrawParams> draw_params;  // cleared after each rendered frame

  // interaction
  struct KeyPress {
    int key = 0;   // GLFW_KEY_*
    int mods = 0;  // GLFW_MOD_*
  };
  std::vector<KeyPress> key_presses;  // since the last frame (a fast tap can fall between frames)
  HoverCell hover;       // drawn this frame (from the previous frame's pointer)
  HoverCell hover_next;  // collected while drawing this frame
  int grid_columns = 1;  // head grid layout, for Up/Down
  bool show_help = false;
  bool open_bundle_requested = false;
  std::string bundle_path_input;
  std::string bundle_error;
  bool quit_requested = false;
  bool close_modal_requested = false;  // Escape: close the open-bundle dialog
  bool bundle_modal_open = false;      // drawn this frame (state log)
  bool modal_was_open = false;         // previous frame, to log the change
  bool busy = false;     // a recompute has run > ~100 ms: spinner shown
  bool item_active = false;  // a widget is held (e.g. a slider being dragged)
  std::string notice;    // one-line message, e.g. "settings.json ignored: ..."

  // export (issue 4): jobs run one at a time on a std::async thread, never on the UI thread
  ExportView export_view = ExportView::Probs;
  std::deque<ExportJob> export_queue;           // waiting (figures wait for a current trace)
  std::future<ExportOutcome> export_running;    // valid() while one runs
  std::string export_running_kind;
  std::chrono::steady_clock::time_point export_started;
  std::optional<ExportOutcome> last_export;
  int64_t export_count = 0;                     // finished exports (ok or failed)
  bool screenshot_requested = false;            // read the window after this frame renders
  std::optional<Toast> toast;

  // control panel text fields that may hold invalid input (never written to settings)
  bool size_by_model_dim = false;  // user types D and H (d = D / H) instead of d
  int64_t typed_model_dim = 64;
  std::string segments_input;
  std::string control_error;       // e.g. "D=100 is not divisible by H=3"

  // persistence (empty paths = do not persist, e.g. under --frames)
  std::string settings_save_path;
  std::string ini_path;
  bool settings_dirty = false;
  std::chrono::steady_clock::time_point settings_changed_at;

  // scripting / tests
  std::FILE* state_log = nullptr;
  bool state_log_pending = false;
  std::string state_log_last;             // last line written (avoid duplicates)
  std::map<std::string, ScreenRect> layout;  // widget rectangles of the last frame
  std::map<std::string, ScreenRect> layout_logged;  // as in the last state-log line
  std::string window_title;
};

// True when a and b differ in a field that changes the computed trace (view-only
// fields such as focused head, colormap, batch item and log scale do not count).
bool computeSettingsDiffer(const Settings& a, const Settings& b);

// The mistakes lab's one-line comparison for the focused head and batch item, e.g.
// "max |Δp| = 0.43 over head 1 (all heads: 0.51, head 3)"; "" when no correct trace.
std::string mistakeDiffSummary(const AppState& state);
// The focused head's max |buggy - correct| probability; -1 when not available.
float focusedDiffMax(const AppState& state);

// Records a widget rectangle (ImGui's last item) for the layout log.
void recordLayout(AppState& state, const std::string& name);
void recordLayoutRect(AppState& state, const std::string& name, float x, float y, float w,
                      float h);

// Call after the user edited state.settings: schedules the debounced save and a state-log line.
void settingsEdited(AppState& state);

// Marks the visible state as changed so one state-log line is written after this frame.
inline void markStateChanged(AppState& state) { state.state_log_pending = true; }

}  // namespace attnscope
