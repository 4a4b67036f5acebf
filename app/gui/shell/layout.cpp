#include <algorithm>
#include <cmath>

#include "gui/shell/panels.h"
#include "gui/features/focus/focus.h"
#include "gui/features/predictions/predictions.h"
#include "gui/features/stepper/stepper.h"

namespace attnscope {
namespace {

// Head group markers, Tableau 10: distinct on the dark theme; groups beyond 10 reuse them.
constexpr ImU32 kGroupColors[] = {
    IM_COL32(78, 121, 167, 255), IM_COL32(242, 142, 43, 255), IM_COL32(225, 87, 89, 255),
    IM_COL32(118, 183, 178, 255), IM_COL32(89, 161, 79, 255), IM_COL32(237, 201, 72, 255),
    IM_COL32(176, 122, 161, 255), IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255),
    IM_COL32(186, 176, 172, 255)};

// Smallest panel sizes a dragged border leaves, in pixels.
constexpr float kMinColumn = 180.0f, kMinCentre = 2 * kMinColumn, kMinBand = 80.0f;  // centre: grid + table

// The one clamp of a size the user dragged (or view.json held): `fraction` of `total` within
// [lo, hi] pixels; the automatic size, untouched, when unset or not a positive number.
float chosenSize(float fraction, float total, float automatic, float lo, float hi) {
  if (!(fraction > 0.0f) || !std::isfinite(fraction)) return automatic;
  return std::floor(std::clamp(fraction * total, lo, std::max(lo, hi)));
}

}  // namespace

PanelRect panelRect(const AppState& state, Panel panel) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const ImVec2 origin = viewport->WorkPos;
  const float width = viewport->WorkSize.x, height = viewport->WorkSize.y;
  const float status_h = std::floor(ImGui::GetFrameHeight() + 8.0f);
  const float body_h = height - status_h;
  const PanelSizes& chosen = state.view.panel_sizes;
  const float right_w = chosenSize(chosen.right, width, std::clamp(std::floor(width * 0.24f), 300.0f, 400.0f),
                                   kMinColumn, width - kMinColumn - kMinCentre);
  const float left_w = chosenSize(chosen.left, width, std::clamp(std::floor(width * 0.2f), 260.0f, 330.0f),
                                  kMinColumn, width - right_w - kMinCentre);
  const float centre_w = width - left_w - right_w;
  // The focus view's square maps are limited by its width; give the head grid whatever
  // height they leave (between 30% and 50%), so neither panel keeps an empty band.
  // Three maps (mistake comparison) have two row-label columns and two colour bars in
  // all, and one more text line (the difference summary) under them.
  const int maps = focusMapCount(state);
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float focus_inner_w = centre_w - 2 * ImGui::GetStyle().WindowPadding.x - 12.0f * (maps - 1);
  const float focus_map = (focus_inner_w - 2 * (70.0f + 58.0f)) / maps;  // minus row labels and colour bars
  const float tab_bar_h = ImGui::GetFrameHeightWithSpacing();  // Maps / Compare tabs
  const float focus_h = focus_map + ImGui::GetFrameHeight() + (maps == 3 ? 8.0f : 7.0f) * line_h + 60.0f + tab_bar_h;
  const float grid_h = chosenSize(chosen.grid, body_h, std::floor(std::clamp(body_h - focus_h, body_h * 0.30f, body_h * 0.50f)),
                                  kMinBand, body_h - 2 * kMinBand);
  // A trained model's predictions take the top of the right column.
  const float predictions_h =
      showsPredictions(state) ? chosenSize(chosen.predictions, body_h, std::floor(body_h * 0.30f), kMinBand, body_h - 2 * kMinBand)
                              : 0.0f;
  const float mask_h = chosenSize(chosen.mask, body_h, std::floor(body_h * (predictions_h > 0 ? 0.30f : 0.36f)), kMinBand,
                                  body_h - predictions_h - kMinBand);
  const float stepper_h = state.feature<StepperState>().open ? std::floor((body_h - predictions_h - mask_h) * 0.6f) : 0.0f;
  const float right_x = origin.x + left_w + centre_w;
  // The head metrics table takes the right part of the grid's band.
  const float table_w = chosenSize(chosen.table, centre_w, std::floor(std::clamp(centre_w * 0.42f, 280.0f, 520.0f)),
                                   kMinColumn, centre_w - kMinColumn);
  switch (panel) {
    case Panel::Controls: return {origin, ImVec2(left_w, body_h)};
    case Panel::HeadGrid: return {ImVec2(origin.x + left_w, origin.y), ImVec2(centre_w - table_w, grid_h)};
    case Panel::Metrics:
      return {ImVec2(origin.x + left_w + centre_w - table_w, origin.y), ImVec2(table_w, grid_h)};
    case Panel::Focus:
      return {ImVec2(origin.x + left_w, origin.y + grid_h), ImVec2(centre_w, body_h - grid_h)};
    case Panel::Predictions: return {ImVec2(right_x, origin.y), ImVec2(right_w, predictions_h)};
    case Panel::Mask: return {ImVec2(right_x, origin.y + predictions_h), ImVec2(right_w, mask_h)};
    case Panel::Stepper: return {ImVec2(right_x, origin.y + predictions_h + mask_h), ImVec2(right_w, stepper_h)};
    case Panel::Pipeline:
      return {ImVec2(right_x, origin.y + predictions_h + mask_h + stepper_h),
              ImVec2(right_w, body_h - predictions_h - mask_h - stepper_h)};
    case Panel::StatusBar: return {ImVec2(origin.x, origin.y + body_h), ImVec2(width, status_h)};
  }
  return {origin, viewport->WorkSize};
}

bool beginPanelWindow(const AppState& state, const char* title, Panel panel, ImGuiWindowFlags extra_flags) {
  const PanelRect rect = panelRect(state, panel);
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
