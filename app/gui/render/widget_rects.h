// Widget rectangles of one frame, for the state log (tests check layout through them).
// Widgets record themselves: the heatmap and colour-bar widgets, panel windows and the
// small widget helpers take the name to record under; nothing is recorded when no state
// log is written.
#pragma once

#include <map>
#include <string>

#include <imgui.h>

namespace attnscope {

// A screen rectangle in framebuffer pixels (top-left origin).
struct ScreenRect {
  float x = 0, y = 0, w = 0, h = 0;
  bool operator==(const ScreenRect& o) const { return x == o.x && y == o.y && w == o.w && h == o.h; }
  bool operator!=(const ScreenRect& o) const { return !(*this == o); }
};

struct WidgetRects {
  bool enabled = false;  // a state log is written
  std::map<std::string, ScreenRect> rects;
  std::map<std::string, std::string> texts;  // labels and notes as drawn, for tests that read wording


  // An empty name records nothing.
  void record(const std::string& name, ImVec2 min, ImVec2 size) {
    if (enabled && !name.empty()) rects[name] = ScreenRect{min.x, min.y, size.x, size.y};
  }
  // ImGui's last item.
  void recordItem(const std::string& name) {
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    record(name, min, ImVec2(max.x - min.x, max.y - min.y));
  }
  void recordText(const std::string& name, const std::string& text) {
    if (enabled) texts[name] = text;
  }
  // The current window (between Begin and End).
  void recordWindow(const std::string& name) { record(name, ImGui::GetWindowPos(), ImGui::GetWindowSize()); }
};

}  // namespace attnscope
