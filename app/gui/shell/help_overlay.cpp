// F1: every keyboard shortcut.
#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// "Ctrl+Shift+S" -> "help_row_ctrl_shift_s": the layout name of a row's description.
std::string rowName(const char* key) {
  std::string name = "help_row_";
  for (const char* c = key; *c; ++c) {
    const bool alnum = std::isalnum(static_cast<unsigned char>(*c)) != 0;
    if (alnum) name += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    else if (name.back() != '_') name += '_';
  }
  if (name.back() == '_') name.pop_back();
  return name;
}

}  // namespace

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
                   "zoomed: only the visible window, named in the file; a generation shown: it, as a "
                   "generation bundle (generation-N in the export folder)"},
        {"Ctrl+Shift+S", "export all heads as one grid figure with a shared colour bar"},
        {"Ctrl+Shift+H", "export every layer and head as one interactive HTML page (opens offline in any browser)"},
        {"Ctrl+Alt+S", "save a screenshot of the whole window"},
        {"Ctrl+O", "open a bundle (directory of .npy files) or a model folder (config.json)"},
        {"F1", "show / hide this help"},
        {"F5", "show / hide the KV-cache stepper (decoding one token at a time)"},
        {", / .", "stepper: one step back / forward"},
        {"P", "stepper: play / pause"},
        {"Home / End", "stepper: first / last step"},
        {"Escape", "close this help or the open-bundle dialog; leave a text box (its text stays); cancel an overview or a load"},
        {"Ctrl+Q", "quit (settings are saved)"},
        {"Ctrl+click a slider", "type an exact value (clamped to the valid range)"},
        {"hover a heatmap cell", "tooltip with tokens, scores, mask and probability"},
        {"click a head tile or overview cell", "focus that head (hover a cell: its map)"},
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
    // Descriptions wrap at a width that fits the smallest window (1280 wide) beside the keys.
    const float text_w = std::min(560.0f, viewport->WorkSize.x * 0.5f);
    if (ImGui::BeginTable("shortcuts", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("key", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableSetupColumn("does", ImGuiTableColumnFlags_WidthFixed, text_w);
      for (const auto& row : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.3f, 1.0f), "%s", row[0]);
        ImGui::TableNextColumn();
        ui::text(state.script.layout, rowName(row[0]), ui::wrappedText(), "%s", row[1]);
      }
      ImGui::EndTable();
    }
    ImGui::TextDisabled("Shortcuts are ignored while a text box is being edited.");
    ImGui::TextDisabled("Exports go to the folder and formats set under Export in the control panel.");
    state.script.layout.recordWindow("help_overlay");
  }
  ImGui::End();
}

}  // namespace attnscope
