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
  // Where each rectangle can be seen whole: the visible part of the window (or table cell)
  // it was drawn in, stretched over the window's scroll range where it shows a scroll bar.
  // A rectangle reaching out of its clip is cut off (tests check this).
  std::map<std::string, ScreenRect> clips;
  std::map<std::string, std::string> texts;  // labels and notes as drawn, for tests that read wording


  // An empty name records nothing.
  void record(const std::string& name, ImVec2 min, ImVec2 size) {
    if (!enabled || name.empty()) return;
    rects[name] = ScreenRect{min.x, min.y, size.x, size.y};
    clips[name] = visibleArea();
  }
  // ImGui's last item.
  void recordItem(const std::string& name) {
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    record(name, min, ImVec2(max.x - min.x, max.y - min.y));
  }
  // Before a frame draws.
  void clear() {
    rects.clear();
    clips.clear();
    texts.clear();
  }
  void recordText(const std::string& name, const std::string& text) {
    if (enabled && !name.empty()) texts[name] = text;
  }
  // The current window (between Begin and End); tests check it against the app's window.
  void recordWindow(const std::string& name) {
    const ImVec2 min = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    if (enabled) rects[name] = ScreenRect{min.x, min.y, size.x, size.y};
  }

 private:
  static ScreenRect visibleArea();
};

}  // namespace attnscope
