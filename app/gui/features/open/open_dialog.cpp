// Ctrl+O: the browser that opens a bundle, a model folder or a settings JSON.
#include "gui/features/open/open_dialog.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "config/attention_bundle.h"
#include "config/bundle.h"
#include "config/model_source.h"
#include "config/run.h"
#include "model/model.h"
#include "gui/shell/panels.h"

namespace attnscope {

namespace {

namespace fs = std::filesystem;

// The dialog's title; "###" keeps the popup's id when the title text changes.
constexpr const char* kOpenTitle = "Open a model folder, bundle or settings file###Open bundle";
constexpr float kPlacesWidth = 230.0f, kListHeight = 300.0f;

// A model folder (attnscope-model/1 or Hugging Face): checked (InputError naming the file; a
// Hugging Face folder's config.json and weight headers and sizes, its weights load on the
// worker), then the run's source; it joins the Models choice once it has run.
void openModelFolder(AppState& state, const std::string& folder) {
  checkModelFolder(folder);
  state.settings = settingsForModel(state.settings, folder);
  state.view.selected_query = -1;
}

// Opens what `path` is (InputError naming it when it is nothing attnscope opens) and
// closes the dialog.
void openPath(AppState& state, std::string path) {
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  const OpenKind kind = openKind(path);
  ViewFocus focus;
  if (kind == OpenKind::Model) {
    openModelFolder(state, path);
  } else if (kind == OpenKind::Settings) {
    state.settings = loadSettingsFile(path, &focus);  // the focus saved beside an export
  } else if (kind == OpenKind::TensorBundle || kind == OpenKind::AttentionBundle) {
    // bundle.json's heads, mask, scale, fill, dropout and seed, as compute and export read them.
    Settings opened = settingsForBundle(state.settings, path);
    if (bundleKind(opened.bundle_path) == BundleKind::Tensors) loadBundle(opened.bundle_path, opened.modelDim(), opened.seed);
    state.settings = opened;
  } else {
    std::error_code ec;
    throw InputError(path + ": " + (fs::exists(path, ec) ? "not a model folder (config.json), bundle (query.npy, "
                                                           "attentions.npy/.npz) or settings JSON"
                                                         : "no such file or folder"));
  }
  state.feature<OpenDialogState>().error.clear();
  state.view.focus = focus;  // a new source starts at its first map (or the saved one); clamped on arrival
  settingsEdited(state);
  ImGui::CloseCurrentPopup();
}

// The path box's new text (from the list or a place); an active box takes it in its callback.
void setInput(OpenDialogState& dialog, const std::string& text) {
  dialog.path_input = text;
  dialog.replace_pending = true;
  dialog.selected = -1;
}

// Enter or a double click on entry i: a folder is gone into, the rest opened.
void chooseEntry(AppState& state, int i) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  const BrowseEntry& entry = dialog.entries[i];
  const std::string folder = splitBrowsePath(dialog.path_input).folder;
  if (entry.name == "..") setInput(dialog, parentBrowsePath(folder));
  else if (entry.kind == OpenKind::Folder) setInput(dialog, folder + entry.name + "/");
  else openPath(state, folder + entry.name);
}

// Enter or Open: the chosen entry, else the typed path (a plain folder is listed).
void submit(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  if (dialog.selected >= 0 && dialog.selected < static_cast<int>(dialog.entries.size())) {
    chooseEntry(state, dialog.selected);
    return;
  }
  if (openKind(dialog.path_input) == OpenKind::Folder) {
    if (dialog.path_input.empty() || dialog.path_input.back() != '/') setInput(dialog, dialog.path_input + "/");
    return;
  }
  openPath(state, dialog.path_input);
}

// A list click, Enter or Open: what fails to open leaves its one-line error in the dialog.
template <typename Action>
void tryOpen(AppState& state, Action action) {
  try {
    action();
  } catch (const InputError& e) {
    state.feature<OpenDialogState>().error = e.what();
    markStateChanged(state);
  }
}

// The path box's callback: list changes, Tab completion, Up/Down, Backspace over a '/'.
int pathBoxCallback(ImGuiInputTextCallbackData* data) {
  OpenDialogState& dialog = *static_cast<OpenDialogState*>(data->UserData);
  const auto replace = [data](const std::string& text) {
    data->DeleteChars(0, data->BufTextLen);
    data->InsertChars(0, text.c_str());
  };
  const std::string text(data->Buf, data->BufTextLen);
  if (data->EventFlag == ImGuiInputTextFlags_CallbackCompletion) {
    const BrowsePath split = splitBrowsePath(text);
    const std::string completed = completeBrowsePath(text, listBrowseFolder(split.folder, split.prefix));
    if (completed != text) replace(completed);
  } else if (data->EventFlag == ImGuiInputTextFlags_CallbackHistory) {
    const int last = static_cast<int>(dialog.entries.size()) - 1;
    dialog.selected = std::clamp(dialog.selected + (data->EventKey == ImGuiKey_DownArrow ? 1 : -1), -1, last);
  } else if (data->EventFlag == ImGuiInputTextFlags_CallbackAlways) {
    const std::string& before = dialog.box_text_before;
    if (dialog.replace_pending) {
      replace(dialog.path_input);
    } else if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Backspace)) && before.size() > 1 &&
               before.back() == '/' && text == before.substr(0, before.size() - 1)) {
      replace(parentBrowsePath(before));  // Backspace right after a '/': one folder up
    }
    // Focused from code, ImGui selects the whole text: keep that only on opening, else type on.
    if (dialog.select_all) data->SelectAll();
    else if (dialog.replace_pending || !dialog.box_active) data->ClearSelection(), data->CursorPos = data->BufTextLen;
    dialog.replace_pending = dialog.select_all = false;
    dialog.box_text_before.assign(data->Buf, data->BufTextLen);
  }
  return 0;
}

// Recent model folders (by name), the shipped models, home and the current folder.
void listPlaces(const AppState& state, OpenDialogState& dialog) {
  dialog.places.clear();
  dialog.place_labels.clear();
  const auto add = [&dialog](const std::string& label, const std::string& path) {
    dialog.place_labels.push_back(label + "##" + path);
    dialog.places.push_back(path);
  };
  for (const std::string& folder : state.view.recent_models) add(modelShortName(folder), folder);
  std::error_code ec;
  if (const std::string assets = assetsDir(); !assets.empty() && fs::is_directory(assets + "/models", ec))
    add("shipped models", assets + "/models/");
  if (const char* home = std::getenv("HOME"); home && *home) add("home", std::string(home) + "/");
  if (const fs::path cwd = fs::current_path(ec); !ec) add("current folder", cwd.string() + "/");
}

void startBrowsing(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  ImGui::OpenPopup(kOpenTitle);
  state.ui.open_requested = false;
  dialog.error.clear();
  listPlaces(state, dialog);
  dialog.on_machine = localModels();  // once per opening: the stores change rarely
  if (dialog.path_input.empty()) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    dialog.path_input = state.settings.source == InputSource::Bundle && !state.settings.bundle_path.empty()
                            ? state.settings.bundle_path
                            : (ec ? std::string() : cwd.string() + "/");
  }
  dialog.select_all = true;  // typing a path replaces the preset one
  dialog.box_text_before = dialog.path_input;
  dialog.listed_for = "\n";  // list on the first frame
}

void drawPlaces(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  ImGui::BeginChild("##places", ImVec2(kPlacesWidth, kListHeight), true);
  ImGui::TextDisabled("Places");
  for (size_t i = 0; i < dialog.places.size(); ++i) {
    const std::string& place = dialog.places[i];
    if (ui::selectable(state.script.layout, "open_place:" + place, dialog.place_labels[i].c_str(), false))
      setInput(dialog, place);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", place.c_str());
  }
  ImGui::EndChild();
}

// "On this machine": one row per model of the stores, "NAME  source · architecture · size ·
// quantization"; a click opens it as the Models choice would, a Hugging Face or Ollama model by
// its store name (hf:ORG/NAME, ollama:NAME:TAG), which the settings keep.
void drawOnThisMachine(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  ImGui::TextDisabled("On this machine");
  const float rows = static_cast<float>(std::clamp<size_t>(dialog.on_machine.size(), 1, 6));
  ImGui::BeginChild("##on_machine", ImVec2(0, rows * ImGui::GetTextLineHeightWithSpacing() + 8.0f), true);
  if (dialog.on_machine.empty())
    ImGui::TextDisabled("no models in the Hugging Face cache, Ollama, LM Studio or llama.cpp's cache");
  for (const LocalModel& m : dialog.on_machine) {
    const std::string label = m.name + "##local:" + m.path;
    if (ui::selectable(state.script.layout, "open_local:" + m.name, label.c_str(), false))
      tryOpen(state, [&] { openPath(state, modelNameOf(m)); });
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", m.path.c_str());
    const std::string facts = m.source + " \u00b7 " + (m.architecture.empty() ? "?" : m.architecture) + " \u00b7 " +
                              std::to_string(m.size_bytes >> 20) + " MiB" + (m.quantization.empty() ? "" : " \u00b7 " + m.quantization);
    ImGui::SameLine(ImGui::GetContentRegionMax().x - ImGui::CalcTextSize(facts.c_str()).x);
    ImGui::TextDisabled("%s", facts.c_str());
  }
  ImGui::EndChild();
}

void drawEntries(AppState& state, bool selection_moved) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  ImGui::BeginChild("##entries", ImVec2(0, kListHeight), true);
  if (dialog.entries.empty()) ImGui::TextDisabled("nothing here that attnscope opens");
  for (int i = 0; i < static_cast<int>(dialog.entries.size()); ++i) {
    const BrowseEntry& entry = dialog.entries[i];
    const bool folder = entry.kind != OpenKind::Settings;
    const std::string label = entry.name + (folder ? "/" : "") + "##entry" + std::to_string(i);
    if (ui::selectable(state.script.layout, "open_entry:" + entry.name, label.c_str(), dialog.selected == i,
                       ImGuiSelectableFlags_AllowDoubleClick)) {
      dialog.selected = i;
      if (!opensDirectly(entry.kind) || ImGui::IsMouseDoubleClicked(0)) tryOpen(state, [&] { chooseEntry(state, i); });
    }
    if (selection_moved && dialog.selected == i) ImGui::SetScrollHereY();
    if (const char* kind = openKindLabel(entry.kind); *kind) {
      ImGui::SameLine(ImGui::GetContentRegionMax().x - ImGui::CalcTextSize(kind).x);
      ImGui::TextDisabled("%s", kind);
    }
  }
  ImGui::EndChild();
}

// The path box changed (typed, completed, chosen): list the folder it points into.
void relist(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  if (dialog.path_input == dialog.listed_for) return;
  const BrowsePath split = splitBrowsePath(dialog.path_input);
  dialog.entries = listBrowseFolder(split.folder, split.prefix);
  dialog.listed_for = dialog.path_input;
  dialog.input_kind = openKind(dialog.path_input);
  dialog.selected = -1;
  dialog.error.clear();
  markStateChanged(state);
}

// A folder that passed openModelFolder's checks but failed on the worker (a NaN in its
// weights, its tokenizer), or a listed folder broken since: the model shown stayed, and the
// dialog opens again on that folder with the error.
void reopenOnLoadFailure(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  if (state.compute.load_failures == dialog.failures_shown) return;
  dialog.failures_shown = state.compute.load_failures;
  dialog.path_input = state.compute.load_failed;
  startBrowsing(state);
  relist(state);
  dialog.error = state.compute.load_error;
}

void drawBrowser(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  drawOnThisMachine(state);
  ImGui::TextWrapped("Model folders (config.json), tensor bundles (query.npy ...), attention bundles "
                     "(attentions.npy/.npz) and settings JSON. Tab completes, Up/Down choose, Enter opens (a "
                     "folder: goes in), Backspace after a '/' goes up.");
  if (!ImGui::IsAnyItemActive()) ImGui::SetKeyboardFocusHere();  // the path box keeps the keyboard
  ImGui::SetNextItemWidth(-1);
  const int selected_before = dialog.selected;
  constexpr ImGuiInputTextFlags kFlags = ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackCompletion |
                                         ImGuiInputTextFlags_CallbackHistory | ImGuiInputTextFlags_CallbackAlways;
  const bool submitted = ui::inputTextWithHint(state.script.layout, "open_path_box", "##bundle_path", "/path/to/folder/",
                                               &dialog.path_input, kFlags, pathBoxCallback, &dialog);
  dialog.box_active = ImGui::IsItemActive();
  relist(state);
  if (dialog.selected != selected_before) markStateChanged(state);
  drawPlaces(state);
  ImGui::SameLine();
  drawEntries(state, dialog.selected != selected_before);
  if (!dialog.error.empty()) {
    errorText(dialog.error);
  } else if (dialog.selected < 0 && opensDirectly(dialog.input_kind)) {
    const std::string hint = std::string("Enter opens this ") + openKindLabel(dialog.input_kind);
    ImGui::TextColored(ImVec4(0.45f, 0.85f, 0.45f, 1.0f), "%s", hint.c_str());
    state.script.layout.recordText("open_hint", hint);
  }
  if (ImGui::Button("Open", ImVec2(120, 0)) || submitted) tryOpen(state, [&] { submit(state); });
  relist(state);  // a folder chosen this frame: its listing is in this frame's state line
}

}  // namespace

bool openDialogKey(AppState& state, const KeyPress& press) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  if (press.key == GLFW_KEY_ESCAPE) {  // offered when no overlay took it: closes the dialog
    if (!dialog.modal_open) return false;
    dialog.close_requested = true;
    return true;
  }
  if ((press.mods & GLFW_MOD_CONTROL) == 0 || press.key != GLFW_KEY_O) return false;
  state.ui.open_requested = true;
  return true;
}

void drawOpenDialog(AppState& state) {
  OpenDialogState& dialog = state.feature<OpenDialogState>();
  if (state.ui.open_requested) startBrowsing(state);
  reopenOnLoadFailure(state);
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f,
                                 viewport->WorkPos.y + viewport->WorkSize.y * 0.4f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(std::min(760.0f, viewport->WorkSize.x - 40.0f), 0));
  dialog.modal_open = false;
  if (ImGui::BeginPopupModal(kOpenTitle, nullptr, ImGuiWindowFlags_NoResize)) {
    dialog.modal_open = true;
    drawBrowser(state);
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(120, 0)) || dialog.close_requested) ImGui::CloseCurrentPopup();
    state.script.layout.recordWindow("bundle_modal");
    ImGui::EndPopup();
  }
  if (dialog.modal_open != dialog.was_open) {
    dialog.was_open = dialog.modal_open;
    markStateChanged(state);
  }
  dialog.close_requested = false;
}

void openDialogToJson(const AppState& state, nlohmann::json& line) {
  const OpenDialogState& dialog = state.feature<OpenDialogState>();
  line["modal_open"] = dialog.modal_open;
  line["open_error"] = dialog.error;  // the open dialog's message
  nlohmann::json entries = nlohmann::json::array();
  for (const BrowseEntry& e : dialog.entries)
    entries.push_back({{"name", e.name}, {"kind", e.kind == OpenKind::Folder ? "folder" : openKindLabel(e.kind)}});
  nlohmann::json onMachine = nlohmann::json::array();
  for (const LocalModel& m : dialog.on_machine)
    onMachine.push_back({{"name", m.name}, {"source", m.source}, {"path", m.path}, {"format", m.format},
                         {"architecture", m.architecture}});
  line["open_browser"] = {{"input", dialog.path_input},
                          {"input_kind", dialog.input_kind == OpenKind::Folder ? "folder" : openKindLabel(dialog.input_kind)},
                          {"entries", entries},
                          {"selected", dialog.selected},
                          {"places", dialog.places},
                          {"on_machine", onMachine}};
}

}  // namespace attnscope
