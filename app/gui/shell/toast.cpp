// Bottom-right overlay: "exporting..." with a spinner while an export runs, then the saved
// paths (or the error, in red) for a few seconds.
#include <imgui.h>

#include <cfloat>

#include "gui/jobs/export_jobs.h"
#include "gui/shell/panels.h"

namespace attnscope {

void drawToast(AppState& state) {
  const bool running = exportBusy(state.exports);
  if (!running && !state.exports.toast) return;
  const bool error = !running && state.exports.toast->error;
  const PanelRect status = statusBarRect();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x - 14, status.pos.y - 14),
                          ImGuiCond_Always, ImVec2(1.0f, 1.0f));
  ImGui::SetNextWindowSizeConstraints(ImVec2(260, 0), ImVec2(viewport->WorkSize.x * 0.6f, FLT_MAX));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, error ? ImVec4(0.62f, 0.10f, 0.10f, 0.97f) : ImVec4(0.12f, 0.20f, 0.16f, 0.97f));
  ImGui::PushStyleColor(ImGuiCol_Border, error ? ImVec4(1.0f, 0.45f, 0.45f, 1.0f) : ImVec4(0.35f, 0.80f, 0.50f, 1.0f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 6.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(14, 10));
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoInputs | ImGuiWindowFlags_NoNav |
                                 ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoSavedSettings;
  if (ImGui::Begin("##toast", nullptr, flags)) {
    if (running) {
      drawSpinner(ImGui::GetTextLineHeight() / 2 + 1);
      ImGui::SameLine();
      const std::string& kind = state.exports.running() ? state.exports.running_kind : state.exports.queue.front().kind;
      ImGui::Text("exporting %s%s...", kind.c_str(),
                  state.exports.running() ? "" : " (waiting for the recompute)");
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, error ? ImVec4(1.0f, 0.92f, 0.92f, 1.0f) : ImVec4(0.85f, 1.0f, 0.88f, 1.0f));
      ImGui::PushTextWrapPos(viewport->WorkSize.x * 0.6f - 28);
      ImGui::TextUnformatted(state.exports.toast->text.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
    }
    state.script.layout.recordWindow("toast");
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
  ImGui::PopStyleColor(2);
}

}  // namespace attnscope
