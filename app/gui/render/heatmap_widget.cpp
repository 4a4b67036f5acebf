#include "gui/render/heatmap_widget.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gui/render/token_text.h"

namespace attnscope {

void bindHeatmapProgram(const ImDrawList*, const ImDrawCmd* cmd) {
  const auto* params = static_cast<const HeatmapDrawParams*>(cmd->UserCallbackData);
  const GlResources& gl = *params->gl;
  const ImDrawData* draw_data = ImGui::GetDrawData();
  const float l = draw_data->DisplayPos.x;
  const float r = draw_data->DisplayPos.x + draw_data->DisplaySize.x;
  const float t = draw_data->DisplayPos.y;
  const float b = draw_data->DisplayPos.y + draw_data->DisplaySize.y;
  const float projection[4][4] = {
      {2.0f / (r - l), 0.0f, 0.0f, 0.0f},
      {0.0f, 2.0f / (t - b), 0.0f, 0.0f},
      {0.0f, 0.0f, -1.0f, 0.0f},
      {(r + l) / (l - r), (t + b) / (b - t), 0.0f, 1.0f},
  };
  glUseProgram(gl.heatmap_program);
  glUniformMatrix4fv(gl.loc_projection, 1, GL_FALSE, &projection[0][0]);
  glUniform1i(gl.loc_values, 0);
  glUniform1i(gl.loc_colormap, 1);
  glUniform1f(gl.loc_range_low, params->range_low);
  glUniform1f(gl.loc_range_high, params->range_high);
  glUniform1i(gl.loc_log_scale, params->log_scale ? 1 : 0);
  glUniform3f(gl.loc_masked_color, kMaskedColor[0] / 255.0f, kMaskedColor[1] / 255.0f,
              kMaskedColor[2] / 255.0f);
  glUniform3f(gl.loc_masked_hatch, kMaskedHatchColor[0] / 255.0f, kMaskedHatchColor[1] / 255.0f,
              kMaskedHatchColor[2] / 255.0f);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, params->lut);
  glActiveTexture(GL_TEXTURE0);  // ImGui binds the values texture here for the image
}

namespace {

float log10Floor(float v) { return std::log10(std::max(v, 1e-30f)); }

// Adds text rotated 90 degrees counter-clockwise, its end at `anchor` (reads upwards).
void addVerticalText(ImDrawList* list, ImVec2 anchor, ImU32 color, const char* text) {
  const int first = list->VtxBuffer.Size;
  const ImVec2 text_size = ImGui::CalcTextSize(text);
  // Laid out at the anchor (text above the clip rectangle would be culled), then rotated:
  // (x, y) relative to the anchor -> (anchor.x + y, anchor.y + text_w - x).
  list->AddText(anchor, color, text);
  for (int i = first; i < list->VtxBuffer.Size; ++i) {
    ImDrawVert& v = list->VtxBuffer[i];
    const ImVec2 p(v.pos.x - anchor.x, v.pos.y - anchor.y);
    v.pos = ImVec2(anchor.x + p.y, anchor.y + text_size.x - p.x);
  }
}

// A failed recompute: the old map dimmed, with why it is out of date written across it
// (wrapped to the map; when it does not fit, just "out of date"; tiles too small for that
// are only dimmed).
void drawStaleOverlay(ImDrawList* list, ImVec2 min, ImVec2 max, const std::string& error) {
  list->AddRectFilled(min, max, IM_COL32(16, 16, 20, 200));
  constexpr float kPad = 6.0f;
  if (max.x - min.x < 80.0f || max.y - min.y < 2 * ImGui::GetFontSize()) return;
  const float wrap = max.x - min.x - 2 * kPad;
  std::string text = "out of date: " + error;
  if (ImGui::CalcTextSize(text.c_str(), nullptr, false, wrap).y > max.y - min.y - 2 * kPad) text = "out of date";
  const ImVec4 clip(min.x, min.y, max.x, max.y);
  list->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(min.x + kPad, min.y + kPad), IM_COL32(255, 130, 120, 255),
                text.c_str(), nullptr, max.x - min.x - 2 * kPad, &clip);
}

// A tiled overview (or a model's load) in progress over the previous result: dimmed a
// little, with a note.
void drawProgressOverlay(ImDrawList* list, ImVec2 min, ImVec2 max, double progress, const char* what) {
  list->AddRectFilled(min, max, IM_COL32(16, 16, 20, 110));
  if (max.x - min.x < 120.0f || max.y - min.y < 2 * ImGui::GetFontSize()) return;
  char text[96];
  std::snprintf(text, sizeof text, "previous result; %s %.0f%%", what, 100.0 * progress);
  const ImVec4 clip(min.x, min.y, max.x, max.y);
  list->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(min.x + 6, min.y + 6), IM_COL32(255, 210, 120, 255),
                text, nullptr, max.x - min.x - 12, &clip);
}

}  // namespace

HeatmapHit drawHeatmap(HeatmapCanvas canvas, const HeatmapView& view, ImVec2 size) {
  HeatmapHit hit;
  const ImVec2 min = ImGui::GetCursorScreenPos();
  const ImVec2 max(min.x + size.x, min.y + size.y);
  ImGui::InvisibleButton(("##" + view.name).c_str(), size);
  if (view.overlapped) ImGui::SetItemAllowOverlap();
  canvas.rects.recordItem(view.name);
  ImDrawList* list = ImGui::GetWindowDrawList();
  if (view.texture == 0 || view.rows <= 0 || view.cols <= 0) return hit;

  const ValueRange range = view.range.value_or(ValueRange{});
  HeatmapDrawParams& params = canvas.gpu.draw_params.emplace_back();
  params.gl = &canvas.gpu.gl;
  params.lut = canvas.gpu.gl.colormap_luts[static_cast<int>(view.colormap)];
  params.log_scale = view.log_scale;
  params.range_low = view.log_scale ? log10Floor(range.low) : range.low;
  params.range_high = view.log_scale ? log10Floor(range.high) : range.high;
  list->AddCallback(bindHeatmapProgram, &params);
  list->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(view.texture)), min, max, view.uv0, view.uv1);
  list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);

  const float cell_w = size.x / static_cast<float>(view.cols);
  const float cell_h = size.y / static_cast<float>(view.rows);
  if (const int64_t marked = view.marked_row - view.row0; view.marked_row >= 0 && marked >= 0 && marked < view.rows) {
    const float y0 = min.y + cell_h * static_cast<float>(marked);
    list->AddRect(ImVec2(min.x, y0), ImVec2(max.x, y0 + cell_h), IM_COL32(255, 204, 51, 255), 0.0f, 0, 2.0f);
  }
  const int64_t hover_row = view.hover_row - view.row0, hover_col = view.hover_col - view.col0;
  if (view.hover_row >= 0 && view.hover_col >= 0 && hover_row >= 0 && hover_row < view.rows && hover_col >= 0 &&
      hover_col < view.cols) {
    const float x0 = min.x + cell_w * static_cast<float>(hover_col);
    const float y0 = min.y + cell_h * static_cast<float>(hover_row);
    const ImU32 line = IM_COL32(255, 255, 255, 150);
    list->AddRect(ImVec2(min.x, y0), ImVec2(max.x, y0 + cell_h), line);
    list->AddRect(ImVec2(x0, min.y), ImVec2(x0 + cell_w, max.y), line);
    list->AddRect(ImVec2(x0 - 1, y0 - 1), ImVec2(x0 + cell_w + 1, y0 + cell_h + 1),
                  IM_COL32(255, 60, 60, 255), 0.0f, 0, 2.0f);
  }
  list->AddRect(ImVec2(min.x - 1, min.y - 1), ImVec2(max.x + 1, max.y + 1),
                view.outlined ? IM_COL32(255, 200, 40, 255) : IM_COL32(90, 90, 100, 255), 0.0f,
                0, view.outlined ? 3.0f : 1.0f);
  if (!view.stale.empty()) {
    drawStaleOverlay(list, min, max, view.stale);
  } else if (view.progress >= 0.0) {
    drawProgressOverlay(list, min, max, view.progress, view.progress_what);
  }

  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    hit.hovered = true;
    hit.col_f = static_cast<double>(view.col0) + std::clamp((mouse.x - min.x) / cell_w, 0.0f, static_cast<float>(view.cols));
    hit.row_f = static_cast<double>(view.row0) + std::clamp((mouse.y - min.y) / cell_h, 0.0f, static_cast<float>(view.rows));
    hit.col = view.col0 + std::clamp<int64_t>(static_cast<int64_t>((mouse.x - min.x) / cell_w), 0, view.cols - 1);
    hit.row = view.row0 + std::clamp<int64_t>(static_cast<int64_t>((mouse.y - min.y) / cell_h), 0, view.rows - 1);
    hit.clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  }
  hit.active = ImGui::IsItemActive();
  return hit;
}

namespace {

// The tick label at fraction f of the bar (0 bottom .. 1 top).
std::string colorBarLabel(const ColorBarView& bar, float f) {
  const ValueRange range = bar.range;
  float value = range.low + (range.high - range.low) * f;
  if (bar.log_scale) {
    const float lo = log10Floor(range.low), hi = log10Floor(range.high);
    value = std::pow(10.0f, lo + (hi - lo) * f);
  }
  char label[32];
  std::snprintf(label, sizeof label, bar.label_format, value);
  return label;
}

}  // namespace

float colorBarWidth(const ColorBarView& bar) {
  float widest = 0.0f;
  for (float f : {0.0f, 0.5f, 1.0f}) widest = std::max(widest, ImGui::CalcTextSize(colorBarLabel(bar, f).c_str()).x);
  return kColorBarStripWidth + kColorBarLabelGap + widest;
}

void drawColorBar(HeatmapCanvas canvas, const ColorBarView& bar, ImVec2 size) {
  const ImVec2 min = ImGui::GetCursorScreenPos();
  const float bar_w = std::min(kColorBarStripWidth, size.x);
  const ImVec2 max(min.x + bar_w, min.y + size.y);
  ImGui::Dummy(size);
  if (!bar.name.empty()) canvas.rects.recordItem(bar.name);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const auto lut = reinterpret_cast<ImTextureID>(
      static_cast<intptr_t>(canvas.gpu.gl.colormap_luts[static_cast<int>(bar.colormap)]));
  // Top of the bar is the high end: u = 1 at the top, 0 at the bottom.
  list->AddImageQuad(lut, min, ImVec2(max.x, min.y), max, ImVec2(min.x, max.y), ImVec2(1, 0.5f),
                     ImVec2(1, 0.5f), ImVec2(0, 0.5f), ImVec2(0, 0.5f));
  list->AddRect(ImVec2(min.x - 1, min.y - 1), ImVec2(max.x + 1, max.y + 1), IM_COL32(90, 90, 100, 255));

  const ImU32 text_color = ImGui::GetColorU32(ImGuiCol_Text);
  const float line_h = ImGui::GetTextLineHeight();
  float widest = 0.0f;
  for (int k = 0; k < 3; ++k) {
    const float f = static_cast<float>(k) / 2.0f;  // 0 bottom .. 1 top
    const std::string text = colorBarLabel(bar, f);
    const char* label = text.c_str();
    const float y = max.y - size.y * f;
    list->AddLine(ImVec2(max.x, y), ImVec2(max.x + 3, y), text_color);
    const float text_y = std::clamp(y - line_h / 2, min.y - line_h / 2, max.y - line_h / 2);
    list->AddText(ImVec2(max.x + kColorBarLabelGap, text_y), text_color, label);
    widest = std::max(widest, ImGui::CalcTextSize(label).x);
  }
  // <name>_labels: where the tick labels reach (tests check that none is cut off).
  if (!bar.name.empty())
    canvas.rects.record(bar.name + "_labels", ImVec2(max.x + kColorBarLabelGap, min.y - line_h / 2),
                        ImVec2(widest, size.y + line_h));
}

float widestLabel(const std::vector<std::string>& labels, float cap) {
  float widest = 0.0f;
  for (const std::string& label : labels) widest = std::max(widest, ImGui::CalcTextSize(visibleToken(label).c_str()).x);
  return std::min(widest, cap);
}

const LabelWidths& tokenLabelWidths(LabelWidths& cache, const ViewModel& view, int64_t batch_item) {
  if (cache.view != view.stamp.value() || cache.batch_item != batch_item) {
    const size_t b = static_cast<size_t>(batch_item);
    cache = {view.stamp.value(), batch_item, widestLabel(view.query_tokens[b], 90.0f), widestLabel(view.key_tokens[b], 80.0f)};
  }
  return cache;
}

AxisLabelsDrawn drawAxisLabels(const LabelSpan& rows, const LabelSpan& cols, ImVec2 min, ImVec2 max) {
  AxisLabelsDrawn drawn;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
  const float line_h = ImGui::GetTextLineHeight();
  if (rows.labels && rows.count > 0) {
    const float cell_h = (max.y - min.y) / static_cast<float>(rows.count);
    const int64_t step = static_cast<int64_t>(std::ceil(line_h / std::max(cell_h, 1e-3f)));
    for (int64_t i = 0; i < rows.count; i += step) {
      const std::string label = visibleToken((*rows.labels)[static_cast<size_t>(rows.first + i)]);
      const char* text = label.c_str();
      const float w = ImGui::CalcTextSize(text).x;
      list->AddText(ImVec2(min.x - w - 4, min.y + cell_h * (static_cast<float>(i) + 0.5f) - line_h / 2),
                    color, text);
      if (drawn.first_row < 0) drawn.first_row = rows.first + i;
      drawn.last_row = rows.first + i;
    }
  }
  if (cols.labels && cols.count > 0) {
    const float cell_w = (max.x - min.x) / static_cast<float>(cols.count);
    const int64_t step = static_cast<int64_t>(std::ceil(line_h / std::max(cell_w, 1e-3f)));
    for (int64_t j = 0; j < cols.count; j += step) {
      const std::string label = visibleToken((*cols.labels)[static_cast<size_t>(cols.first + j)]);
      addVerticalText(list, ImVec2(min.x + cell_w * (static_cast<float>(j) + 0.5f) - line_h / 2, max.y + 4),
                      color, label.c_str());
      if (drawn.first_col < 0) drawn.first_col = cols.first + j;
      drawn.last_col = cols.first + j;
    }
  }
  return drawn;
}

}  // namespace attnscope
