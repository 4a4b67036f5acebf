#include "gui/shell/persistence.h"

#include "gui/shell/app_state.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "attention/mistakes.h"
#include "config/model_source.h"
#include "config/run.h"
#include "tensor/npy.h"

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

// A pick from {"layer": 0, "head": 1, "run": "this" | "correct" | "with:<mistake>"}; false
// when malformed.
bool readPick(const nlohmann::json& j, MapPick& pick) {
  if (!j.is_object()) return false;
  const auto layer = j.find("layer"), head = j.find("head"), run = j.find("run");
  if (layer == j.end() || head == j.end() || run == j.end() || !layer->is_number_integer() ||
      !head->is_number_integer() || !run->is_string())
    return false;
  const std::string run_name = *run;
  if (*layer < 0 || *head < 0) return false;
  pick = {layer->get<int64_t>(), head->get<int64_t>(), run_name == "correct", Mistake::None};
  if (run_name.rfind("with:", 0) == 0) {
    const std::optional<Mistake> with = mistakeNames().find(run_name.substr(5));
    if (!with) return false;
    pick.with = *with;
    return pick.with != Mistake::None;
  }
  return run_name == "this" || run_name == "correct";
}

// view.json at start: applied, or (unreadable, not JSON) moved aside as view.json.bad with a notice.
void loadPersistentView(AppState& state) {
  const std::string& path = state.persist.view_save_path;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    applyPersistentView(j, state.view);
    return;
  }
  std::filesystem::rename(path, path + ".bad", ec);
  const std::string notice = path + " is not a JSON object: the table sort and compare picks start on defaults" +
                             (ec ? "" : " (the file is kept as " + path + ".bad)");
  state.ui.notice = state.ui.notice.empty() ? notice : state.ui.notice + "\n" + notice;
}

}  // namespace

nlohmann::json persistentViewJson(const ViewState& view) {
  nlohmann::json j = {{"table", {{"sort_column", headColumnName(view.table.sort.column)},
                                 {"descending", view.table.sort.descending},
                                 {"order_grid", view.table.order_grid}}}};
  if (view.compare.chosen) j["compare"] = {{"a", pickJson(view.compare.a)}, {"b", pickJson(view.compare.b)}};
  if (!view.recent_models.empty()) j["recent_models"] = view.recent_models;
  if (view.panel_sizes != PanelSizes{}) {
    nlohmann::json& sizes = j["panel_sizes"];
    for (const auto& [name, size] : kPanelSizeFields) sizes[name] = view.panel_sizes.*size;
  }
  return j;
}

void applyPersistentView(const nlohmann::json& j, ViewState& view) {
  if (const auto table = j.find("table"); table != j.end() && table->is_object()) {
    const auto column = table->find("sort_column"), descending = table->find("descending");
    if (column != table->end() && column->is_string() && descending != table->end() && descending->is_boolean()) {
      for (int c = 0; c < headColumnCount(); ++c)
        if (headColumnName(c) == column->get<std::string>()) {
          view.table.sort = {c, descending->get<bool>()};
          view.table.sort_to_table = true;
        }
    }
    if (const auto order = table->find("order_grid"); order != table->end() && order->is_boolean())
      view.table.order_grid = *order;
  }
  if (const auto compare = j.find("compare"); compare != j.end() && compare->is_object()) {
    MapPick a, b;
    if (compare->contains("a") && compare->contains("b") && readPick((*compare)["a"], a) && readPick((*compare)["b"], b))
      view.compare = {a, b, true};
  }
  // Panel sizes as saved: numbers only; panelRect clamps them to the window.
  if (const auto sizes = j.find("panel_sizes"); sizes != j.end() && sizes->is_object()) {
    for (const auto& [name, size] : kPanelSizeFields)
      if (const auto value = sizes->find(name); value != sizes->end() && value->is_number() &&
                                                 std::fabs(value->get<double>()) < 1e6)  // 1e300 is no fraction (nor a float)
        view.panel_sizes.*size = static_cast<float>(value->get<double>());
  }
  // Recent model folders that are still model folders, oldest first so the newest ends first.
  if (const auto recent = j.find("recent_models"); recent != j.end() && recent->is_array()) {
    for (auto it = recent->rbegin(); it != recent->rend(); ++it)
      if (it->is_string() && isModelFolder(it->get<std::string>())) rememberModel(view, it->get<std::string>());
  }
}

std::string loadStartupSettings(const AppOptions& options, AppState& state) {
  const bool persist = options.frames < 0;  // scripted runs never touch the user's config
  const std::string config = persist ? configDir() : "";
  if (!config.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(config, ec);
    if (!ec) {
      state.persist.settings_save_path = config + "/settings.json";
      state.persist.view_save_path = config + "/view.json";
      state.persist.ini_path = config + "/imgui.ini";
    }
  }
  loadPersistentView(state);
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
    state.settings.source = InputSource::Model;  // a first start opens on the code model,
    state.view.focus_featured_head = true;        // on the head its caption talks about
  }
  if (isModelFolder(options.bundle)) {
    // attnscope MODEL: the model on the saved text (or the model's own sample text); an
    // unknown hf: / ollama: name is the start's one-line error (exit 1).
    try {
      state.settings = settingsForModel(state.settings, options.bundle);
    } catch (const InputError& e) {
      return e.what();
    }
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
    if (!state.persist.view_save_path.empty())
      writeFileAtomic(state.persist.view_save_path, persistentViewJson(state.view).dump(2) + "\n");
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
