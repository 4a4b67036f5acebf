#include "gui/render/widgets.h"

#include <imgui_internal.h>  // the active text box's edit state: its cursor and horizontal scroll
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdarg>
#include <utility>

namespace attnscope::ui {
namespace {

// Records ImGui's last item (the widget just drawn) and passes its result on.
bool recorded(WidgetRects& rects, const std::string& name, bool result) {
  rects.recordItem(name);
  return result;
}

}  // namespace

bool button(WidgetRects& rects, const std::string& name, const char* label, ImVec2 size) {
  return recorded(rects, name, ImGui::Button(label, size));
}
bool smallButton(WidgetRects& rects, const std::string& name, const char* label) {
  return recorded(rects, name, ImGui::SmallButton(label));
}
bool invisibleButton(WidgetRects& rects, const std::string& name, const char* id, ImVec2 size) {
  return recorded(rects, name, ImGui::InvisibleButton(id, size));
}
bool checkbox(WidgetRects& rects, const std::string& name, const char* label, bool* value) {
  return recorded(rects, name, ImGui::Checkbox(label, value));
}
bool inputInt(WidgetRects& rects, const std::string& name, const char* label, int* value) {
  return recorded(rects, name, ImGui::InputInt(label, value));
}
bool radioButton(WidgetRects& rects, const std::string& name, const char* label, bool active) {
  return recorded(rects, name, ImGui::RadioButton(label, active));
}
bool radioButton(WidgetRects& rects, const std::string& name, const char* label, int* value, int button_value) {
  return recorded(rects, name, ImGui::RadioButton(label, value, button_value));
}
bool selectable(WidgetRects& rects, const std::string& name, const char* label, bool selected,
                ImGuiSelectableFlags flags) {
  return recorded(rects, name, ImGui::Selectable(label, selected, flags));
}
bool sliderScalar(WidgetRects& rects, const std::string& name, const char* label, ImGuiDataType type, void* value,
                  const void* low, const void* high, const char* format, ImGuiSliderFlags flags) {
  return recorded(rects, name, ImGui::SliderScalar(label, type, value, low, high, format, flags));
}
bool sliderInt(WidgetRects& rects, const std::string& name, const char* label, int* value, int low, int high,
               const char* format, ImGuiSliderFlags flags) {
  return recorded(rects, name, ImGui::SliderInt(label, value, low, high, format, flags));
}
bool sliderFloat(WidgetRects& rects, const std::string& name, const char* label, float* value, float low, float high,
                 const char* format, ImGuiSliderFlags flags) {
  return recorded(rects, name, ImGui::SliderFloat(label, value, low, high, format, flags));
}
bool combo(WidgetRects& rects, const std::string& name, const char* label, int* index, const char* const items[],
           int count) {
  return recorded(rects, name, ImGui::Combo(label, index, items, count));
}
namespace {

// <name>_cursor_x: where the cursor of the text box being typed in is drawn, in pixels from
// the box's left edge, and <name>_scroll_x its horizontal scroll (a long line scrolls so that
// the cursor stays in view; Dear ImGui 1.86 does not wrap). Neither while it is inactive.
void recordCursor(WidgetRects& rects, const std::string& name) {
  const ImGuiInputTextState* edit = ImGui::GetInputTextState(ImGui::GetItemID());
  if (!rects.enabled || !edit || ImGui::GetActiveID() != edit->ID) return;
  const ImWchar* begin = edit->TextW.Data;
  const ImWchar* cursor = begin + std::clamp(edit->Stb.cursor, 0, edit->CurLenW);
  const ImWchar* line = cursor;
  while (line > begin && line[-1] != '\n') --line;
  std::string utf8(static_cast<size_t>(cursor - line) * 4 + 1, '\0');
  utf8.resize(static_cast<size_t>(ImTextStrToUtf8(utf8.data(), static_cast<int>(utf8.size()), line, cursor)));
  const float x = ImGui::GetStyle().FramePadding.x + ImGui::CalcTextSize(utf8.c_str()).x - edit->ScrollX;
  rects.recordText(name + "_cursor_x", std::to_string(static_cast<int>(x)));
  rects.recordText(name + "_scroll_x", std::to_string(static_cast<int>(edit->ScrollX)));
}

}  // namespace

bool inputTextMultiline(WidgetRects& rects, const std::string& name, const char* label, std::string* text,
                        ImVec2 size) {
  const bool changed = recorded(rects, name, ImGui::InputTextMultiline(label, text, size));
  recordCursor(rects, name);
  return changed;
}
bool inputTextWithHint(WidgetRects& rects, const std::string& name, const char* label, const char* hint,
                       std::string* text, ImGuiInputTextFlags flags, ImGuiInputTextCallback callback, void* user_data) {
  return recorded(rects, name, ImGui::InputTextWithHint(label, hint, text, flags, callback, user_data));
}
// <name>_label: the label right of the arrow, as it would be drawn whole.
bool collapsingHeader(WidgetRects& rects, const std::string& name, const char* label) {
  const bool open = recorded(rects, name, ImGui::CollapsingHeader(label));
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  const float arrow_w = ImGui::GetFontSize() + 3 * ImGui::GetStyle().FramePadding.x;
  rects.record(name + "_label", ImVec2(min.x + arrow_w, min.y),
               ImVec2(ImGui::CalcTextSize(label, nullptr, true).x, max.y - min.y));
  return open;
}
bool beginTabItem(WidgetRects& rects, const std::string& name, const char* label, ImGuiTabItemFlags flags) {
  return recorded(rects, name, ImGui::BeginTabItem(label, nullptr, flags));
}
// The header's rectangle is its cell's (whose background reaches into the table's padding);
// <name>_label is the label's as it would be drawn whole, what must fit its column.
void tableHeader(WidgetRects& rects, const std::string& name, const char* label) {
  const ImVec2 label_min = ImGui::GetCursorScreenPos();
  ImGui::TableHeader(label);
  rects.recordItem(name);
  rects.clips.erase(name);
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  rects.record(name + "_label", ImVec2(label_min.x, min.y),
               ImVec2(ImGui::CalcTextSize(label, nullptr, true).x, max.y - min.y));
}
void progressBar(WidgetRects& rects, const std::string& name, float fraction, ImVec2 size, const char* overlay) {
  ImGui::ProgressBar(fraction, size, overlay);
  rects.recordItem(name);
}
void plotLines(WidgetRects& rects, const std::string& name, const char* id, const float* values, int count,
               const char* overlay, float low, float high, ImVec2 size) {
  ImGui::PlotLines(id, values, count, 0, overlay, low, high, size);
  rects.recordItem(name);
}
void dummy(WidgetRects& rects, const std::string& name, ImVec2 size) {
  ImGui::Dummy(size);
  rects.recordItem(name);
}

void text(WidgetRects& rects, const std::string& name, const TextLook& look, const char* format, ...) {
  va_list args;
  va_start(args, format);
  if (look.wrapped) {
    if (look.color) ImGui::PushStyleColor(ImGuiCol_Text, *look.color);
    ImGui::TextWrappedV(format, args);
    if (look.color) ImGui::PopStyleColor();
  } else if (look.color) {
    ImGui::TextColoredV(*look.color, format, args);
  } else {
    ImGui::TextV(format, args);
  }
  va_end(args);
  rects.recordItem(name);
}
void textUnformatted(WidgetRects& rects, const std::string& name, const std::string& text) {
  ImGui::TextUnformatted(text.c_str(), text.c_str() + text.size());
  rects.recordItem(name);
  rects.recordText(name, text);
}

void endGroup(WidgetRects& rects, const std::string& name) {
  ImGui::EndGroup();
  rects.recordItem(name);
}
void endTable(WidgetRects& rects, const std::string& name) {
  ImGui::EndTable();
  rects.recordItem(name);
}
void endChild(WidgetRects& rects, const std::string& name) {
  ImGui::EndChild();
  rects.recordItem(name);
}

Combo::Combo(WidgetRects& rects, std::string name, const char* label, const char* preview, ImGuiComboFlags flags)
    : rects_(rects), name_(std::move(name)), open_(ImGui::BeginCombo(label, preview, flags)) {}

// EndCombo() ends the popup's window, which gives the combo box back as ImGui's last item.
Combo::~Combo() {
  if (open_) ImGui::EndCombo();
  rects_.recordItem(name_);
}

}  // namespace attnscope::ui
