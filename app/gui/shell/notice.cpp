// Top-centre notice (a settings file moved aside, a save that failed): wrapped inside the
// window, on top of the panels until the user dismisses it.
#include <imgui.h>

#include <algorithm>

#include "gui/shell/panels.h"

namespace attnscope {

void drawNotice(AppState& state) {
  if (state.ui.notice.empty()) return;
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float width = std::min(760.0f, viewport->WorkSize.x - 40.0f);
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f, viewport->WorkPos.y + 40),
                          ImGuiCond_Always, ImVec2(0.5f, 0.0f));
  ImGui::SetNextWindowSizeConstraints(ImVec2(width, 0), ImVec2(width, viewport->WorkSize.y - 80));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.30f, 0.22f, 0.06f, 0.98f));
  ImGui::PushStyleColor(ImGuiCol_Border, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(14, 10));
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing;
  if (ImGui::Begin("##notice", nullptr, flags)) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width - 28);
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.5f, 1.0f), "%s", state.ui.notice.c_str());
    ImGui::PopTextWrapPos();
    const bool dismiss = ui::button(state.script.layout, "notice_dismiss", "Dismiss");
    state.script.layout.recordWindow("notice");
    if (dismiss) {
      state.ui.notice.clear();
      markStateChanged(state);
    }
  }
  ImGui::End();
  ImGui::PopStyleVar();
  ImGui::PopStyleColor(2);
}

}  // namespace attnscope
