#include "gui/persistence.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "config/model_source.h"
#include "config/run.h"

namespace attnscope {
namespace {

constexpr auto kSaveDelay = std::chrono::seconds(1);

// $XDG_CONFIG_HOME/attnscope, else ~/.config/attnscope; "" when neither is known.
std::string configDir() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/attnscope";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.config/attnscope";
  return "";
}

}  // namespace

std::string loadStartupSettings(const AppOptions& options, AppState& state) {
  const bool persist = options.frames < 0;  // scripted runs never touch the user's config
  const std::string config = persist ? configDir() : "";
  if (!config.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(config, ec);
    if (!ec) {
      state.persist.settings_save_path = config + "/settings.json";
      state.persist.ini_path = config + "/imgui.ini";
    }
  }
  const std::string& saved = state.persist.settings_save_path;
  if (!options.settings_file.empty()) {
    try {
      state.settings = loadSettingsFile(options.settings_file, &state.view.focus);
    } catch (const InputError& e) {
      return e.what();
    }
  } else if (!saved.empty() && std::filesystem::exists(saved)) {
    // A bad file is moved aside (never overwritten); its valid keys are kept.
    RecoveredSettings recovered = recoverSettingsFile(saved);
    state.settings = std::move(recovered.settings);
    state.view.focus = recovered.focus;
    state.ui.notice = recovered.notice;
  } else {
    state.settings.source = InputSource::Model;  // a first start opens on the code model
  }
  if (isModelFolder(options.bundle)) {
    // attnscope MODEL: the model on the saved text (or the model's own sample text).
    state.settings = settingsForModel(state.settings, options.bundle);
  } else if (!options.bundle.empty()) {
    try {
      // bundle.json's run keys, exactly as `attnscope compute/export BUNDLE` read them.
      state.settings = settingsForBundle(state.settings, options.bundle);
    } catch (const InputError& e) {
      state.settings.source = InputSource::Bundle;
      state.settings.bundle_path = options.bundle;
      state.ui.notice = state.ui.notice.empty() ? e.what() : state.ui.notice + "\n" + e.what();
    }
  }
  return "";
}

void saveSettingsNow(AppState& state) {
  state.persist.dirty = false;
  if (state.persist.settings_save_path.empty()) return;
  try {
    saveSettingsFile(state.settings, state.persist.settings_save_path, state.view.focus);
  } catch (const InputError& e) {
    state.ui.notice = e.what();
  }
}

void saveWhenDue(AppState& state) {
  if (state.persist.dirty && std::chrono::steady_clock::now() - state.persist.changed_at > kSaveDelay) {
    saveSettingsNow(state);
  }
}

}  // namespace attnscope
