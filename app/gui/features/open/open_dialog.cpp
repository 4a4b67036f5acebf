// Ctrl+O: the dialog that opens a bundle or a model folder.
#include "gui/features/open/open_dialog.h"

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

void drawOpenDialog(AppState& state) {
  if (state.open_dialog.requested) {
    ImGui::OpenPopup(kOpenTitle);
    state.open_dialog.requested = false;
    state.open_dialog.error.clear();
    if (state.open_dialog.path_input.empty()) state.open_dialog.path_input = state.settings.bundle_path;
  }
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f,
                                 viewport->WorkPos.y + viewport->WorkSize.y * 0.4f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(560, 0));
  state.open_dialog.modal_open = false;
  if (ImGui::BeginPopupModal(kOpenTitle, nullptr, ImGuiWindowFlags_NoResize)) {
    state.open_dialog.modal_open = true;
    ImGui::TextWrapped("A bundle is a directory with query.npy (and optionally key.npy, value.npy, "
                       "w_q.npy ... w_o.npy, masks, tokens, bundle.json) or attentions.npy. A model folder "
                       "(attnscope-model/1: config.json, vocab.json, one .npy per tensor) opens as a trained model.");
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    const bool submitted = ImGui::InputTextWithHint("##bundle_path", "/path/to/bundle", &state.open_dialog.path_input,
                                                    ImGuiInputTextFlags_EnterReturnsTrue);
    if (!state.open_dialog.error.empty()) errorText(state.open_dialog.error);
    if (ImGui::Button("Open", ImVec2(120, 0)) || submitted) {
      try {
        if (!std::filesystem::is_directory(state.open_dialog.path_input)) {
          throw InputError("bundle: " + state.open_dialog.path_input + " is not a directory");
        }
        if (isModelFolder(state.open_dialog.path_input)) {
          openModelFolder(state, state.open_dialog.path_input);
        } else {
          // bundle.json's heads, mask, scale, fill, dropout and seed, as compute and export read them.
          Settings opened = settingsForBundle(state.settings, state.open_dialog.path_input);
          if (bundleKind(opened.bundle_path) == BundleKind::Tensors)
            loadBundle(opened.bundle_path, opened.modelDim(), opened.seed);
          state.settings = opened;
        }
        setFocus(state, ViewFocus{});  // a new bundle starts at its first map
        settingsEdited(state);
        ImGui::CloseCurrentPopup();
      } catch (const InputError& e) {
        state.open_dialog.error = e.what();
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(120, 0)) || state.open_dialog.close_requested) ImGui::CloseCurrentPopup();
    state.script.layout.recordWindow("bundle_modal");
    ImGui::EndPopup();
  }
  if (state.open_dialog.modal_open != state.open_dialog.was_open) {
    state.open_dialog.was_open = state.open_dialog.modal_open;
    markStateChanged(state);
  }
  state.open_dialog.close_requested = false;
}

void openDialogToJson(const AppState& state, nlohmann::json& line) {
  line["modal_open"] = state.open_dialog.modal_open;
  line["open_error"] = state.open_dialog.error;  // the open dialog's message
}

}  // namespace attnscope
