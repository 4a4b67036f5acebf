// Settings and focus across runs: $XDG_CONFIG_HOME/attnscope/settings.json (and ImGui's
// imgui.ini beside it), loaded at start, saved a second after the last change and on exit.
// Scripted runs (--frames) never touch the user's config.
#pragma once

#include <string>

#include "gui/app_options.h"
#include "gui/app_state.h"

namespace attnscope {

// Fills state.settings and state.view.focus from --settings FILE, else the saved file,
// then BUNDLE. Returns "" or the one-line error of a bad --settings file (exit 1); a bad
// saved file only leaves a notice.
std::string loadStartupSettings(const AppOptions& options, AppState& state);

// Saves when the last change is a second old (once per frame).
void saveWhenDue(AppState& state);
void saveSettingsNow(AppState& state);

}  // namespace attnscope
