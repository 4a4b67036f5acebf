#include "gui/features/panel_borders/panel_borders.h"

#include <imgui.h>

#include <cmath>

#include "gui/shell/panels.h"

namespace attnscope {
namespace {

constexpr float kGrab = 4.0f;  // pixels either side of a border that pick it up

// One draggable border: the edge of panel `along` that the fraction `size` moves. Vertical
// borders are dragged sideways; `far_edge`: the panel's left edge (its width is measured from
// the right), else its right or bottom edge; `full_height`: the line runs the whole panel area.
struct Border {
  const char* name;
  bool vertical;
  float PanelSizes::*size;
  const char* along;  // the panel's registry row
  bool far_edge;
  bool full_height;
};

constexpr Border kBorders[] = {
    {"left", true, &PanelSizes::left, "controls", false, true},
    {"right", true, &PanelSizes::right, "pipeline", true, true},
    {"table", true, &PanelSizes::table, "metrics", true, false},
    {"grid", false, &PanelSizes::grid, "head_grid", false, false},
    {"predictions", false, &PanelSizes::predictions, "predictions", false, false},
    {"mask", false, &PanelSizes::mask, "mask", false, false},
};
constexpr int kBorderCount = sizeof kBorders / sizeof kBorders[0];

// The border's line this frame: a vertical one at x from y0 to y1, or a horizontal one at y
// from x0 to x1; empty (length 0) when its panel is not shown.
struct BorderLine {
  float at = 0, from = 0, to = 0;
};

BorderLine borderLine(const AppState& state, const Border& border) {
  const PanelRect r = panelRect(state, border.along);
  if (r.size.x <= 0 || r.size.y <= 0) return {};
  if (!border.vertical) return {r.pos.y + r.size.y, r.pos.x, r.pos.x + r.size.x};
  const PanelRect body = border.full_height ? panelRect(state, "controls") : r;
  return {border.far_edge ? r.pos.x : r.pos.x + r.size.x, body.pos.y, body.pos.y + body.size.y};
}

bool nearLine(const Border& border, const BorderLine& line, ImVec2 mouse) {
  const float along = border.vertical ? mouse.y : mouse.x, across = border.vertical ? mouse.x : mouse.y;
  return line.to > line.from && along >= line.from && along <= line.to && std::fabs(across - line.at) <= kGrab;
}

// The fraction that puts `border` under the pointer: widths of the window's (the table: of
// the centre column's), heights of the panel area's, from the panel's top or outer edge.
float fractionAt(const AppState& state, const Border& border, ImVec2 mouse) {
  const PanelRect body = panelRect(state, "controls"), panel = panelRect(state, border.along);
  if (!border.vertical) return (mouse.y - panel.pos.y) / body.size.y;
  const PanelRect grid = panelRect(state, "head_grid"), table = panelRect(state, "metrics");
  const float total = border.full_height ? ImGui::GetMainViewport()->WorkSize.x : grid.size.x + table.size.x;
  const float start = border.full_height ? ImGui::GetMainViewport()->WorkPos.x : grid.pos.x;
  return border.far_edge ? (start + total - mouse.x) / total : (mouse.x - start) / total;
}

void drawBorderLine(const Border& border, const BorderLine& line, bool held) {
  const ImU32 colour = ImGui::GetColorU32(held ? ImGuiCol_SeparatorActive : ImGuiCol_SeparatorHovered);
  ImDrawList* list = ImGui::GetForegroundDrawList();
  if (border.vertical) list->AddLine(ImVec2(line.at, line.from), ImVec2(line.at, line.to), colour, 2.0f);
  else list->AddLine(ImVec2(line.from, line.at), ImVec2(line.to, line.at), colour, 2.0f);
}

}  // namespace

void updatePanelBorders(AppState& state) {
  PanelBordersState& drag = state.feature<PanelBordersState>();
  ImGuiIO& io = ImGui::GetIO();
  if (drag.dragged >= 0 && !io.MouseDown[0]) {  // released: the layout is saved a second later
    drag.dragged = -1;
    saveLater(state);
  }
  const bool blocked = ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) || state.ui.show_help;
  if (drag.dragged >= 0) {
    const Border& border = kBorders[drag.dragged];
    float& size = state.view.panel_sizes.*border.size;
    const ImVec2 pointer = border.vertical ? ImVec2(io.MousePos.x - drag.grab_offset, io.MousePos.y)
                                           : ImVec2(io.MousePos.x, io.MousePos.y - drag.grab_offset);
    const float wanted = fractionAt(state, border, pointer);
    if (std::isfinite(wanted) && wanted != size) {
      size = wanted;
      markStateChanged(state);
    }
  }
  for (int b = 0; b < kBorderCount; ++b) {
    const Border& border = kBorders[b];
    const BorderLine line = borderLine(state, border);
    const bool held = drag.dragged == b;
    if (!held && (blocked || drag.dragged >= 0 || ImGui::IsAnyItemActive() || !nearLine(border, line, io.MousePos)))
      continue;
    ImGui::SetMouseCursor(border.vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
    drawBorderLine(border, line, held);
    if (!held && ImGui::IsMouseClicked(0)) {
      drag.dragged = b;
      drag.grab_offset = (border.vertical ? io.MousePos.x : io.MousePos.y) - line.at;
      markStateChanged(state);
    }
  }
  // The press belongs to the border: no widget or scrollbar under it takes it this frame
  // (the backend sets the button's real state again next frame).
  if (drag.dragged >= 0) io.MouseClicked[0] = io.MouseDown[0] = false;
}

void panelBordersToJson(const AppState& state, nlohmann::json& line) {
  nlohmann::json panels = nlohmann::json::object();
  for (const auto& [name, r] : panelRects(state)) panels[name] = {r.pos.x, r.pos.y, r.size.x, r.size.y};
  line["panels"] = panels;
  nlohmann::json& sizes = line["panel_sizes"];
  for (const auto& [name, size] : kPanelSizeFields) sizes[name] = state.view.panel_sizes.*size;
  line["border_dragged"] = state.feature<PanelBordersState>().dragged >= 0 ? kBorders[state.feature<PanelBordersState>().dragged].name : "";
}

}  // namespace attnscope
