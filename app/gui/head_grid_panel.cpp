// Small multiples: every head's probability map for the batch item on one shared colour
// scale. Click a tile (or use the arrow keys) to focus a head.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/export_jobs.h"
#include "gui/heatmap_widget.h"
#include "gui/panels.h"

namespace attnscope {

void drawHeadGridPanel(AppState& state) {
  if (beginPanelWindow(state, "Heads", Panel::HeadGrid, ImGuiWindowFlags_NoScrollbar)) {
    const TraceTextures& tex = state.gpu.textures;
    const AttentionTrace* trace = state.compute.trace.get();
    if (!trace || tex.probs.empty()) {
      ImGui::TextDisabled("no attention computed yet");
      ImGui::End();
      return;
    }
    Settings& s = state.settings;
    const int64_t H = static_cast<int64_t>(tex.probs.size());
    const ValueRange range{s.log_scale ? tex.prob_min_positive : 0.0f, tex.prob_max};

    // Choose the column count that covers the most area with tiles, each at the matrix's
    // aspect ratio, widened by up to kMaxStretch to use spare width (cells stay near square).
    constexpr float kMaxStretch = 1.4f;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float bar_w = 70.0f, label_h = ImGui::GetTextLineHeightWithSpacing(), gap = 10.0f;
    const float aspect = std::max(static_cast<float>(trace->S) / static_cast<float>(trace->L), 0.25f);
    float best_area = 0.0f, tile_w = 8.0f, tile_h = 8.0f;
    int best_cols = 1;
    for (int cols = 1; cols <= H; ++cols) {
      const int rows = static_cast<int>((H + cols - 1) / cols);
      const float slot_w = (avail.x - bar_w) / cols - gap;
      const float slot_h = (avail.y - 4) / rows - label_h - gap;
      const float h = std::min(slot_h, slot_w / aspect);
      const float w = std::min(slot_w, h * aspect * kMaxStretch);
      if (h > 0 && w * h > best_area) {
        best_area = w * h;
        best_cols = cols;
        tile_w = std::max(8.0f, std::floor(w));
        tile_h = std::max(8.0f, std::floor(h));
      }
    }
    state.view.grid_columns = best_cols;

    // Centre the tiles and colour bar when they leave width unused.
    const float spare = std::max(0.0f, avail.x - bar_w - best_cols * (tile_w + gap));
    const ImVec2 origin(ImGui::GetCursorScreenPos().x + std::floor(spare / 2), ImGui::GetCursorScreenPos().y);
    for (int64_t h = 0; h < H; ++h) {
      const int col = static_cast<int>(h % best_cols), row = static_cast<int>(h / best_cols);
      const ImVec2 pos(origin.x + col * (tile_w + gap), origin.y + row * (tile_h + label_h + gap));
      ImGui::SetCursorScreenPos(pos);
      const bool focused = h == state.view.focus.head;
      ImGui::PushStyleColor(ImGuiCol_Text, focused ? ImVec4(1.0f, 0.8f, 0.2f, 1.0f)
                                                   : ImGui::GetStyle().Colors[ImGuiCol_Text]);
      ImGui::Text("head %lld", static_cast<long long>(h));
      ImGui::PopStyleColor();
      ImGui::SetCursorScreenPos(ImVec2(pos.x, pos.y + label_h));
      HeatmapView view;
      view.texture = tex.probs[h];
      view.rows = trace->L;
      view.cols = trace->S;
      view.colormap = s.prob_colormap;
      view.range = range;
      view.log_scale = s.log_scale;
      view.outlined = focused;
      char id[32];
      std::snprintf(id, sizeof id, "##tile%lld", static_cast<long long>(h));
      const HeatmapHit hit = drawHeatmap(state, id, view, ImVec2(tile_w, tile_h));
      recordLayout(state, "grid_tile_" + std::to_string(h));
      if (hit.hovered) {
        state.view.hover_next = {hit.row, hit.col};
        ImGui::SetTooltip("head %lld: click to focus", static_cast<long long>(h));
      }
      if (hit.clicked && !focused) {
        ViewFocus focus = state.view.focus;
        focus.head = h;
        setFocus(state, focus);
      }
    }
    const int rows = static_cast<int>((H + best_cols - 1) / best_cols);
    ImGui::SetCursorScreenPos(ImVec2(origin.x + best_cols * (tile_w + gap) + 4, origin.y + label_h));
    const float bar_h = std::max(40.0f, std::min(rows * (tile_h + label_h + gap) - label_h - gap, 480.0f));
    drawColorBar(state, s.prob_colormap, range, s.log_scale, "%.2g", ImVec2(bar_w - 8, bar_h));
    ImGui::SetCursorScreenPos(ImVec2(origin.x + best_cols * (tile_w + gap) + 4, origin.y));
    if (ImGui::SmallButton("Export##grid")) requestFigureExport(state, "grid");
    recordLayout(state, "export_grid_small");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("export all heads as one figure (Ctrl+Shift+S)");
  }
  ImGui::End();
}

}  // namespace attnscope
