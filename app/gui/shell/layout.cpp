#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gui/shell/feature_registry.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// The columns over the panel area (the window minus the status line): x and width by Column.
struct Columns {
  ImVec2 origin;
  float body_h = 0;
  float x[4] = {}, w[4] = {};
};

float statusHeight() { return std::floor(ImGui::GetFrameHeight() + 8.0f); }

Columns columns(const AppState& state) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  Columns c;
  c.origin = viewport->WorkPos;
  const float width = viewport->WorkSize.x;
  c.body_h = viewport->WorkSize.y - statusHeight();
  const PanelSizes& chosen = state.view.panel_sizes;
  const float right_w = chosenSize(chosen.right, width, std::clamp(std::floor(width * 0.24f), 300.0f, 400.0f),
                                   kMinColumn, width - kMinColumn - kMinCentre);
  const float left_w = chosenSize(chosen.left, width, std::clamp(std::floor(width * 0.2f), 260.0f, 330.0f),
                                  kMinColumn, width - right_w - kMinCentre);
  const float centre_w = width - left_w - right_w;
  const int left = static_cast<int>(Column::Left), centre = static_cast<int>(Column::Centre),
            right = static_cast<int>(Column::Right);
  c.x[left] = c.origin.x, c.w[left] = left_w;
  c.x[centre] = c.origin.x + left_w, c.w[centre] = centre_w;
  c.x[right] = c.x[centre] + centre_w, c.w[right] = right_w;
  return c;
}

// A band of one column: the panels of one order, side by side.
struct Band {
  std::vector<const PanelRow*> rows;
  float height = 0;
  bool rest = false;  // no height hook: takes what the column's other bands leave
};

// The bands of `column`, top to bottom, with their heights.
std::vector<Band> columnBands(const AppState& state, Column column, const Columns& c) {
  std::vector<const PanelRow*> rows;
  for (const PanelRow& row : registeredPanels())
    if (row.place.column == column) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const PanelRow* a, const PanelRow* b) { return a->place.order < b->place.order; });
  std::vector<Band> bands;
  for (const PanelRow* row : rows) {
    if (bands.empty() || bands.back().rows.front()->place.order != row->place.order) bands.emplace_back();
    bands.back().rows.push_back(row);
  }
  ColumnSpace space{c.w[static_cast<int>(column)], c.body_h, 0.0f};
  float rest = c.body_h;
  for (Band& band : bands) {
    const PanelPlace& first = band.rows.front()->place;
    auto hooked = std::find_if(band.rows.begin(), band.rows.end(), [](const PanelRow* r) { return r->place.height; });
    band.rest = hooked == band.rows.end();
    if (first.shown && !first.shown(state)) band.rest = false;  // not shown: 0 high
    else if (!band.rest) band.height = (*hooked)->place.height(state, space);
    space.above += band.height;
    rest -= band.height;
  }
  for (Band& band : bands)
    if (band.rest) band.height = rest;
  return bands;
}

// One band's panels at height y: hooked widths from the band's right edge, the rest left.
void layOutBand(const AppState& state, const Band& band, float x, float w, float y, const ColumnSpace& space,
                std::vector<std::pair<const char*, PanelRect>>& rects) {
  float right = x + w;
  const PanelRow* rest = nullptr;
  for (const PanelRow* row : band.rows) {
    if (!row->place.width) {
      rest = row;
      continue;
    }
    const float row_w = row->place.width(state, space);
    right -= row_w;
    rects.emplace_back(row->name, PanelRect{ImVec2(right, y), ImVec2(row_w, band.height)});
  }
  if (rest) rects.emplace_back(rest->name, PanelRect{ImVec2(x, y), ImVec2(right - x, band.height)});
}

// Head group markers, Tableau 10: distinct on the dark theme; groups beyond 10 reuse them.
constexpr ImU32 kGroupColors[] = {
    IM_COL32(78, 121, 167, 255), IM_COL32(242, 142, 43, 255), IM_COL32(225, 87, 89, 255),
    IM_COL32(118, 183, 178, 255), IM_COL32(89, 161, 79, 255), IM_COL32(237, 201, 72, 255),
    IM_COL32(176, 122, 161, 255), IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255),
    IM_COL32(186, 176, 172, 255)};

}  // namespace

float chosenSize(float fraction, float total, float automatic, float lo, float hi) {
  if (!(fraction > 0.0f) || !std::isfinite(fraction)) return automatic;
  return std::floor(std::clamp(fraction * total, lo, std::max(lo, hi)));
}

std::vector<std::pair<const char*, PanelRect>> panelRects(const AppState& state) {
  const Columns c = columns(state);
  std::vector<std::pair<const char*, PanelRect>> rects;
  for (Column column : {Column::Left, Column::Centre, Column::Right}) {
    const int i = static_cast<int>(column);
    float y = c.origin.y;
    for (const Band& band : columnBands(state, column, c)) {
      layOutBand(state, band, c.x[i], c.w[i], y, ColumnSpace{c.w[i], c.body_h, 0.0f}, rects);
      y += band.height;
    }
  }
  return rects;
}

PanelRect panelRect(const AppState& state, const char* panel) {
  for (const auto& [name, rect] : panelRects(state))
    if (std::strcmp(name, panel) == 0) return rect;
  return {};
}

PanelRect statusBarRect() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float status_h = statusHeight();
  return {ImVec2(viewport->WorkPos.x, viewport->WorkPos.y + (viewport->WorkSize.y - status_h)),
          ImVec2(viewport->WorkSize.x, status_h)};
}

bool beginPanelWindow(const AppState& state, const char* title, const char* panel, ImGuiWindowFlags extra_flags) {
  return beginPanelWindow(title, panelRect(state, panel), extra_flags);
}

bool beginPanelWindow(const char* title, const PanelRect& rect, ImGuiWindowFlags extra_flags) {
  ImGui::SetNextWindowPos(rect.pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(rect.size, ImGuiCond_Always);
  return ImGui::Begin(title, nullptr,
                      ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                          ImGuiWindowFlags_NoBringToFrontOnFocus | extra_flags);
}

HeatmapCanvas heatmapCanvas(AppState& state) { return {state.gpu, state.script.layout}; }

void showResultState(const AppState& state, HeatmapView& view, bool crosshair) {
  if (crosshair && state.view.hover.valid()) view.hover_row = state.view.hover.row, view.hover_col = state.view.hover.col;
  const ComputeState& c = state.compute;
  if (c.mapsStale()) {
    view.stale = c.cancelled ? "overview cancelled (Recompute: status bar)"
                 : c.textTooLong() ? "the last text that fit the context"  // the message is under the text box
                                   : c.error();
  }
  view.progress = c.progress;
  if (c.loading) view.progress_what = "loading the model";
}

void drawOverviewToggle(AppState& state, const ViewModel& view) {
  bool shown = overviewShown(state, view);
  if (ui::checkbox(state.script.layout, "overview_toggle", "overview", &shown)) {
    state.view.overview_chosen = shown;
    markStateChanged(state);
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("layers x heads overview: one cell per head, coloured by a head metric\n"
                      "(on by itself above %lld heads; off: a map tile per head)",
                      static_cast<long long>(kOverviewAutoHeads));
}

void drawAblateToggle(AppState& state, const ViewModel& view, const std::string& name, int64_t layer, int64_t head) {
  static constexpr const char* kLabels[] = {"-", "0", "m"};  // by ablation: none, zero, mean
  static constexpr const char* kStates[] = {"on", "ablated (zero)", "ablated (mean)"};
  const uint8_t now = view.ablation(layer, head);
  const std::string label = std::string(kLabels[now]) + "##" + name;
  const bool ablated = now != kNotAblated;
  if (ablated) ImGui::PushStyleColor(ImGuiCol_Button, kInterventionColor);
  const bool clicked = ui::smallButton(state.script.layout, name, label.c_str());
  if (ablated) ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("L%lldH%lld %s: click to cycle on -> ablate (zero) -> ablate (mean) -> on",
                      static_cast<long long>(layer), static_cast<long long>(head), kStates[now]);
  if (!clicked) return;
  const std::optional<AblationMode> next[] = {AblationMode::Zero, AblationMode::Mean, std::nullopt};
  setHeadAblation(state, layer, head, next[now]);
}

ImU32 groupColor(int64_t group) {
  constexpr int64_t count = sizeof kGroupColors / sizeof kGroupColors[0];
  return kGroupColors[((group % count) + count) % count];
}

void sectionHeader(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.55f, 0.78f, 1.0f, 1.0f));
  ImGui::TextUnformatted(text);
  ImGui::PopStyleColor();
  ImGui::Separator();
}

void errorText(const std::string& message) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.35f, 0.35f, 1.0f));
  ImGui::TextWrapped("%s", message.c_str());
  ImGui::PopStyleColor();
}

void warningText(const std::string& message) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.62f, 0.18f, 1.0f));
  ImGui::TextWrapped("%s", message.c_str());
  ImGui::PopStyleColor();
}

void errorText(WidgetRects& rects, const std::string& name, const std::string& message) {
  errorText(message);
  rects.recordItem(name);
}

void warningText(WidgetRects& rects, const std::string& name, const std::string& message) {
  warningText(message);
  rects.recordItem(name);
}

void sameLineIfFits(float width) {
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < width) ImGui::NewLine();
}

std::string fitText(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  std::string cut = text;
  while (!cut.empty() && ImGui::CalcTextSize((cut + "..").c_str()).x > width) {
    cut.pop_back();
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();  // continuation bytes
  }
  return cut + "..";
}

size_t firstFitting(const std::vector<std::string>& candidates, float width) {
  for (size_t i = 0; i < candidates.size(); ++i)
    if (ImGui::CalcTextSize(candidates[i].c_str()).x <= width) return i;
  return candidates.size() - 1;
}

void drawSpinner(float radius) {
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(radius * 2, radius * 2));
  const ImVec2 centre(pos.x + radius, pos.y + radius);
  const float t = static_cast<float>(ImGui::GetTime()) * 6.0f;
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->PathArcTo(centre, radius - 2, t, t + 4.2f, 24);
  list->PathStroke(ImGui::GetColorU32(ImGuiCol_ButtonActive), 0, 3.0f);
}

void drawSpinner(WidgetRects& rects, const std::string& name, float radius) {
  drawSpinner(radius);
  rects.recordItem(name);
}

}  // namespace attnscope
