// Dear ImGui widgets that record their rectangle under a name for the state log, so that a
// panel draws and records in one call (tests find widgets by these names). Each behaves as
// its ImGui namesake; an empty name records nothing.
#pragma once

#include <optional>
#include <string>

#include <imgui.h>

#include "gui/render/widget_rects.h"

namespace attnscope::ui {

bool button(WidgetRects& rects, const std::string& name, const char* label, ImVec2 size = ImVec2(0, 0));
bool smallButton(WidgetRects& rects, const std::string& name, const char* label);
bool invisibleButton(WidgetRects& rects, const std::string& name, const char* id, ImVec2 size);
bool checkbox(WidgetRects& rects, const std::string& name, const char* label, bool* value);
bool inputInt(WidgetRects& rects, const std::string& name, const char* label, int* value);
bool radioButton(WidgetRects& rects, const std::string& name, const char* label, bool active);
bool radioButton(WidgetRects& rects, const std::string& name, const char* label, int* value, int button_value);
bool selectable(WidgetRects& rects, const std::string& name, const char* label, bool selected,
                ImGuiSelectableFlags flags = 0);
bool sliderScalar(WidgetRects& rects, const std::string& name, const char* label, ImGuiDataType type, void* value,
                  const void* low, const void* high, const char* format, ImGuiSliderFlags flags);
bool sliderInt(WidgetRects& rects, const std::string& name, const char* label, int* value, int low, int high,
               const char* format, ImGuiSliderFlags flags);
bool sliderFloat(WidgetRects& rects, const std::string& name, const char* label, float* value, float low, float high,
                 const char* format, ImGuiSliderFlags flags);
bool combo(WidgetRects& rects, const std::string& name, const char* label, int* index, const char* const items[],
           int count);
bool inputTextMultiline(WidgetRects& rects, const std::string& name, const char* label, std::string* text,
                        ImVec2 size);
bool inputTextWithHint(WidgetRects& rects, const std::string& name, const char* label, const char* hint,
                       std::string* text, ImGuiInputTextFlags flags = 0, ImGuiInputTextCallback callback = nullptr,
                       void* user_data = nullptr);
bool collapsingHeader(WidgetRects& rects, const std::string& name, const char* label);
bool beginTabItem(WidgetRects& rects, const std::string& name, const char* label, ImGuiTabItemFlags flags = 0);
void tableHeader(WidgetRects& rects, const std::string& name, const char* label);
void progressBar(WidgetRects& rects, const std::string& name, float fraction, ImVec2 size,
                 const char* overlay = nullptr);
void plotLines(WidgetRects& rects, const std::string& name, const char* id, const float* values, int count,
               const char* overlay, float low, float high, ImVec2 size);
void dummy(WidgetRects& rects, const std::string& name, ImVec2 size);

// How text is drawn: in a colour (the style's text colour when none), wrapped at the
// window's edge (or the pushed wrap position) or not.
struct TextLook {
  std::optional<ImVec4> color;
  bool wrapped = false;
};
inline TextLook plainText() { return {}; }
inline TextLook disabledText() { return {ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]}; }
inline TextLook coloredText(const ImVec4& color) { return {color}; }
inline TextLook wrappedText() { return {std::nullopt, true}; }

// Text as ImGui::Text, TextDisabled, TextColored or TextWrapped draw it; the rectangle is the
// text's as drawn (a test compares it with its panel's).
void text(WidgetRects& rects, const std::string& name, const TextLook& look, const char* format, ...) IM_FMTARGS(4);
// Also records the text (labels cut to fit end in "..").
void textUnformatted(WidgetRects& rects, const std::string& name, const std::string& text);

// EndGroup() / EndTable() / EndChild() that record the group's, table's or child window's rectangle.
void endGroup(WidgetRects& rects, const std::string& name);
void endTable(WidgetRects& rects, const std::string& name);
void endChild(WidgetRects& rects, const std::string& name);

// BeginCombo() .. EndCombo() as a scope: the combo box is recorded (and the popup ended)
// when it closes, open or not: `if (ui::Combo combo(rects, "name", "##id", preview); combo) {...}`.
class Combo {
 public:
  Combo(WidgetRects& rects, std::string name, const char* label, const char* preview, ImGuiComboFlags flags = 0);
  ~Combo();
  Combo(const Combo&) = delete;
  Combo& operator=(const Combo&) = delete;
  explicit operator bool() const { return open_; }

 private:
  WidgetRects& rects_;
  std::string name_;
  bool open_;
};

}  // namespace attnscope::ui
