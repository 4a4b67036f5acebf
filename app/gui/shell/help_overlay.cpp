// F1: every keyboard shortcut; Ctrl+O: the dialog that opens a bundle or a model folder.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

#include "config/attention_bundle.h"
#include "config/bundle.h"
#include "config/model_source.h"
#include "config/run.h"
#include "model/model.h"
#include "gui/shell/panels.h"

namespace attnscope {

void drawHelpOverlay(AppState& state) {
  if (!state.ui.show_help) return;
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f,
                                 viewport->WorkPos.y + viewport->WorkSize.y * 0.5f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowBgAlpha(0.95f);
  if (ImGui::Begin("Keyboard shortcuts", &state.ui.show_help,
                   ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoMove)) {
    const char* rows[][2] = {
        {"Left / Right", "focus the previous / next head"},
        {"Up / Down", "focus the head one grid row up / down"},
        {"Ctrl+S", "export the selected heatmap (the map kind chosen over the focus view, or the map clicked); "
                   "zoomed: only the visible window, named in the file"},
        {"Ctrl+Shift+S", "export all heads as one grid figure with a shared colour bar"},
        {"Ctrl+Alt+S", "save a screenshot of the whole window"},
        {"Ctrl+O", "open a bundle (directory of .npy files) or a model folder (config.json)"},
        {"F1", "show / hide this help"},
        {"F5", "show / hide the KV-cache stepper (decoding one token at a time)"},
        {", / .", "stepper: one step back / forward"},
        {"P", "stepper: play / pause"},
        {"Home / End", "stepper: first / last step"},
        {"Escape", "close this help or the open-bundle dialog"},
        {"Ctrl+Q", "quit (settings are saved)"},
        {"Ctrl+click a slider", "type an exact value (clamped to the valid range)"},
        {"hover a heatmap cell", "tooltip with tokens, scores, mask and probability"},
        {"click a head tile", "focus that head"},
        {"click a metrics column header", "sort the head table by it (again: reverse)"},
        {"click a metrics table row", "focus that head"},
        {"click a query token (row label)", "its attention in every head (Query focus tab)"},
        {"Ctrl+click a query token", "add it to (or remove it from) the chosen queries"},
        {"click a score / probability / mask map", "select it for Ctrl+S (highlighted)"},
        {"map: rollout / flow (focus view)", "attention rollout / flow after each layer (sources with several layers)"},
        {"mouse wheel over a focus map", "zoom in / out around the pointer (axis labels and tooltip follow)"},
        {"drag a focus map", "pan the zoomed window"},
        {"0", "reset the zoom: the whole map again"},
    };
    if (ImGui::BeginTable("shortcuts", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      for (const auto& row : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.3f, 1.0f), "%s", row[0]);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(row[1]);
      }
      ImGui::EndTable();
    }
    ImGui::TextDisabled("Shortcuts are ignored while a text box is being edited.");
    ImGui::TextDisabled("Exports go to the folder and formats set under Export in the control panel.");
    const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    recordLayoutRect(state, "help_overlay", pos.x, pos.y, size.x, size.y);
  }
  ImGui::End();
}

namespace {

// The dialog's title; "###" keeps the popup's id when the title text changes.
constexpr const char* kOpenTitle = "Open bundle or model folder###Open bundle";

// A model folder from the dialog: checked (InputError naming the file), then the run's
// source and one of the Models choice's entries.
void openModelFolder(AppState& state, const std::string& folder) {
  loadModel(folder);
  state.settings = settingsForModel(state.settings, folder);
  std::vector<std::string>& opened = state.ui.opened_models;
  if (std::find(opened.begin(), opened.end(), state.settings.model) == opened.end())
    opened.push_back(state.settings.model);
  state.view.selected_query = -1;
}

}  // namespace

void drawOpenBundleModal(AppState& state) {
  if (state.ui.open_bundle_requested) {
    ImGui::OpenPopup(kOpenTitle);
    state.ui.open_bundle_requested = false;
    state.ui.bundle_error.clear();
    if (state.ui.bundle_path_input.empty()) state.ui.bundle_path_input = state.settings.bundle_path;
  }
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f,
                                 viewport->WorkPos.y + viewport->WorkSize.y * 0.4f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(560, 0));
  state.ui.bundle_modal_open = false;
  if (ImGui::BeginPopupModal(kOpenTitle, nullptr, ImGuiWindowFlags_NoResize)) {
    state.ui.bundle_modal_open = true;
    ImGui::TextWrapped("A bundle is a directory with query.npy (and optionally key.npy, value.npy, "
                       "w_q.npy ... w_o.npy, masks, tokens, bundle.json) or attentions.npy. A model folder "
                       "(attnscope-model/1: config.json, vocab.json, one .npy per tensor) opens as a trained model.");
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    const bool submitted = ImGui::InputTextWithHint("##bundle_path", "/path/to/bundle", &state.ui.bundle_path_input,
                                                    ImGuiInputTextFlags_EnterReturnsTrue);
    if (!state.ui.bundle_error.empty()) errorText(state.ui.bundle_error);
    if (ImGui::Button("Open", ImVec2(120, 0)) || submitted) {
      try {
        if (!std::filesystem::is_directory(state.ui.bundle_path_input)) {
          throw InputError("bundle: " + state.ui.bundle_path_input + " is not a directory");
        }
        if (isModelFolder(state.ui.bundle_path_input)) {
          openModelFolder(state, state.ui.bundle_path_input);
        } else {
          // bundle.json's heads, mask, scale, fill, dropout and seed, as compute and export read them.
          Settings opened = settingsForBundle(state.settings, state.ui.bundle_path_input);
          if (bundleKind(opened.bundle_path) == BundleKind::Tensors)
            loadBundle(opened.bundle_path, opened.modelDim(), opened.seed);
          state.settings = opened;
        }
        setFocus(state, ViewFocus{});  // a new bundle starts at its first map
        settingsEdited(state);
        ImGui::CloseCurrentPopup();
      } catch (const InputError& e) {
        state.ui.bundle_error = e.what();
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(120, 0)) || state.ui.close_modal_requested) ImGui::CloseCurrentPopup();
    const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    recordLayoutRect(state, "bundle_modal", pos.x, pos.y, size.x, size.y);
    ImGui::EndPopup();
  }
  if (state.ui.bundle_modal_open != state.ui.modal_was_open) {
    state.ui.modal_was_open = state.ui.bundle_modal_open;
    markStateChanged(state);
  }
  state.ui.close_modal_requested = false;
}

}  // namespace attnscope
