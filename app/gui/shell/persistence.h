// Settings and focus across runs: $XDG_CONFIG_HOME/attnscope/settings.json (and ImGui's
// imgui.ini beside it), loaded at start, saved a second after the last change and on exit.
// Scripted runs (--frames) never touch the user's config.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "gui/shell/app_options.h"
#include "gui/shell/view_state.h"

namespace attnscope {

struct AppState;

// Empty paths = do not persist (e.g. under --frames).
struct PersistState {
  std::string settings_save_path;
  std::string view_save_path;  // view.json: the head table's sort, order grid, compare picks, panel sizes
  std::string ini_path;
  bool dirty = false;
  std::chrono::steady_clock::time_point changed_at;
};

// Fills state.settings and state.view.focus from --settings FILE, else the saved file,
// then BUNDLE. Returns "" or the one-line error of a bad --settings file (exit 1); a bad
// saved file only leaves a notice.
std::string loadStartupSettings(const AppOptions& options, AppState& state);

// What of the view state outlives a run (view.json beside settings.json): the head table's
// sort column and direction, "order grid by table", and the compare view's picks once the
// user chose them, the panel sizes the user dragged. What is missing or malformed keeps its
// default; picks and panel sizes are clamped where they are used.
nlohmann::json persistentViewJson(const ViewState& view);
void applyPersistentView(const nlohmann::json& j, ViewState& view);

// Saves when the last change is a second old (once per frame).
void saveWhenDue(AppState& state);
void saveSettingsNow(AppState& state);

}  // namespace attnscope
