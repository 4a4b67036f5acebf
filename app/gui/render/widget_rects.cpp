#include "gui/render/widget_rects.h"

#include <imgui_internal.h>  // whether the window shows its scroll bars

namespace attnscope {

ScreenRect WidgetRects::visibleArea() {
  ImDrawList* list = ImGui::GetWindowDrawList();
  ImVec2 min = list->GetClipRectMin(), max = list->GetClipRectMax();
  const ImGuiWindow* window = ImGui::GetCurrentWindowRead();
  if (window->ScrollbarX) {  // what is left or right of the view can be scrolled to
    min.x -= window->Scroll.x;
    max.x += window->ScrollMax.x - window->Scroll.x;
  }
  if (window->ScrollbarY) {  // and what is above or below
    min.y -= window->Scroll.y;
    max.y += window->ScrollMax.y - window->Scroll.y;
  }
  return ScreenRect{min.x, min.y, max.x - min.x, max.y - min.y};
}

}  // namespace attnscope
