#include "gui/shell/head_scroll.h"

#include <imgui.h>
#include <imgui_internal.h>  // the current window's clip rectangle and scroll target

#include "gui/shell/app_state.h"

namespace attnscope {

void beginHeadRows(HeadScrollList& list) { list.drawing.clear(); }

void endHeadRows(AppState& state, HeadScrollList& list) {
  if (list.drawing == list.visible) return;
  list.visible.swap(list.drawing);
  markStateChanged(state);
}

void headRowDrawn(AppState& state, HeadScrollList& list, int64_t layer, int64_t head, int64_t H, float top_inset) {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  const bool visible = min.y >= window->InnerClipRect.Min.y + top_inset && max.y <= window->InnerClipRect.Max.y;
  const int64_t n = layer * H + head;
  if (visible) list.drawing.push_back(n);
  const ViewFocus& focus = state.view.focus;
  if (layer != focus.layer || head != focus.head || list.scrolled_for == focus) return;
  list.scrolled_for = focus;
  if (visible) return;
  ImGui::SetScrollFromPosY((min.y + max.y) / 2 - window->Pos.y, 0.5f);
  list.scrolled_to = n;
  markStateChanged(state);
}

void headScrollToJson(const AppState& state, nlohmann::json& line) {
  const auto list = [](const HeadScrollList& l) {
    nlohmann::json out = {{"scrolled_to", nullptr}, {"visible", l.visible}};
    if (l.scrolled_to >= 0) out["scrolled_to"] = l.scrolled_to;
    return out;
  };
  line["table_scroll"] = list(state.head_scroll.table);
  line["grid_scroll"] = list(state.head_scroll.grid);
}

}  // namespace attnscope
