// The focused head: scaled scores (diverging, centred at 0) beside probabilities, token
// labels on both axes, colour bars, a hover tooltip and the fully-masked-row marks.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/export_jobs.h"
#include "gui/heatmap_widget.h"
#include "gui/panels.h"

namespace attnscope {
namespace {

const std::vector<std::string>& tokensFor(const std::vector<std::vector<std::string>>& per_item,
                                          const std::vector<std::string>& fallback, int64_t b) {
  return b < static_cast<int64_t>(per_item.size()) ? per_item[b] : fallback;
}

float widestLabel(const std::vector<std::string>& labels, float cap) {
  float widest = 0.0f;
  for (const std::string& label : labels) widest = std::max(widest, ImGui::CalcTextSize(label.c_str()).x);
  return std::min(widest, cap);
}

void drawCellTooltip(const AttentionTrace& t, int64_t b, int64_t h, int64_t i, int64_t j,
                     const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens) {
  const size_t cell = static_cast<size_t>(((b * t.H + h) * t.L + i) * t.S + j);  // [B, H, L, S]
  const bool allowed = t.mask.allowed.data[(b * t.L + i) * t.S + j] != 0;          // [B, L, S]
  const bool row_masked = t.fully_masked.data[b * t.L + i] != 0;                  // [B, L]
  ImGui::BeginTooltip();
  ImGui::Text("query  %s  (i = %lld)", q_tokens[i].c_str(), static_cast<long long>(i));
  ImGui::Text("key    %s  (j = %lld)", k_tokens[j].c_str(), static_cast<long long>(j));
  ImGui::Separator();
  ImGui::Text("raw score  q.k     %.5g", t.raw_scores.data[cell]);
  if (allowed) {
    ImGui::Text("scaled score (x%.4g) %.5g", t.scale, t.scores.data[cell]);
  } else {
    ImGui::Text("scaled score       %s (masked)", t.fill == MaskFill::NegInf ? "-inf" : "-1e9");
  }
  ImGui::Text("masked             %s", allowed ? "no" : "yes");
  ImGui::Text("probability        %.5g", t.probs.data[cell]);
  if (t.dropout_applied) ImGui::Text("after dropout      %.5g", t.probs_dropped.data[cell]);
  if (row_masked) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.45f, 1.0f));
    ImGui::TextUnformatted("every key of this query is masked: PyTorch returns NaN here");
    ImGui::PopStyleColor();
  }
  ImGui::EndTooltip();
}

}  // namespace

void drawFocusPanel(AppState& state) {
  if (beginPanelWindow("Focus", Panel::Focus, ImGuiWindowFlags_NoScrollbar)) {
    const AttentionTrace* t = state.trace.get();
    const TraceTextures& tex = state.textures;
    if (!t || tex.probs.empty()) {
      ImGui::TextDisabled("no attention computed yet");
      ImGui::End();
      return;
    }
    Settings& s = state.settings;
    const int64_t b = tex.batch_item;
    const int64_t h = std::clamp<int64_t>(s.focused_head, 0, t->H - 1);
    const auto& q_tokens = tokensFor(t->batch_query_tokens, t->query_tokens, b);
    const auto& k_tokens = tokensFor(t->batch_key_tokens, t->key_tokens, b);

    ImGui::Text("head %lld of %lld   batch item %lld   L = %lld queries (rows) x S = %lld keys (columns)",
                static_cast<long long>(h), static_cast<long long>(t->H), static_cast<long long>(b),
                static_cast<long long>(t->L), static_cast<long long>(t->S));

    const float line_h = ImGui::GetTextLineHeightWithSpacing();
    const float row_label_w = widestLabel(q_tokens, 90.0f) + 8.0f;
    const float col_label_h = widestLabel(k_tokens, 80.0f) + 8.0f;
    const float bar_w = 58.0f, gap = 12.0f;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float block_w = (avail.x - gap) / 2.0f;
    const float max_w = block_w - row_label_w - bar_w;
    const float max_h = avail.y - line_h * 3.2f - col_label_h;
    const float aspect = static_cast<float>(t->S) / static_cast<float>(t->L);
    float map_h = std::min(max_h, max_w / aspect);
    float map_w = map_h * aspect;
    map_h = std::max(16.0f, std::floor(map_h));
    map_w = std::max(16.0f, std::floor(map_w));

    const ImVec2 origin = ImGui::GetCursorScreenPos();
    struct Side {
      const char* title;
      const char* id;
      const char* layout_name;
      HeatmapView view;
      ValueRange range;
      bool log_scale;
      ExportView export_view;
    };
    const float score_max = tex.score_abs_max[h];
    const ValueRange prob_range{s.log_scale ? tex.prob_min_positive : 0.0f, tex.prob_max};
    Side sides[2];
    sides[0] = {"scores (scaled, before softmax)", "##scores", "focus_scores", {}, {-score_max, score_max}, false, ExportView::Scores};
    sides[0].view.texture = tex.scores[h];
    sides[0].view.colormap = Colormap::Diverging;
    sides[1] = {t->dropout_applied ? "probabilities (after dropout)" : "probabilities (softmax over keys)",
                "##probs", "focus_probs", {}, prob_range, s.log_scale, ExportView::Probs};
    sides[1].view.texture = tex.probs[h];
    sides[1].view.colormap = s.prob_colormap;
    sides[1].view.log_scale = s.log_scale;

    for (int k = 0; k < 2; ++k) {
      Side& side = sides[k];
      const float x0 = origin.x + k * (block_w + gap);
      // Title line: a small Export button, then the title (yellow when Ctrl+S exports this map).
      const bool selected = state.export_view == side.export_view;
      ImGui::SetCursorScreenPos(ImVec2(x0 + row_label_w, origin.y));
      ImGui::PushID(side.id);
      if (ImGui::SmallButton("Export")) {
        state.export_view = side.export_view;
        requestFigureExport(state, exportViewName(side.export_view));
      }
      ImGui::PopID();
      recordLayout(state, std::string("export_") + exportViewName(side.export_view) + "_button");
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("export this heatmap as a figure (formats and folder under Export in the control panel)");
      }
      ImGui::SameLine();
      if (selected) {
        ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.2f, 1.0f), "%s", side.title);
      } else {
        ImGui::TextUnformatted(side.title);
      }
      const ImVec2 map_min(x0 + row_label_w, origin.y + line_h);
      ImGui::SetCursorScreenPos(map_min);
      side.view.rows = t->L;
      side.view.cols = t->S;
      side.view.range = side.range;
      side.view.outlined = selected;
      const HeatmapHit hit = drawHeatmap(state, side.id, side.view, ImVec2(map_w, map_h));
      recordLayout(state, side.layout_name);
      if (hit.clicked && !selected) {
        state.export_view = side.export_view;
        markStateChanged(state);
      }
      const ImVec2 map_max(map_min.x + map_w, map_min.y + map_h);
      drawAxisLabels(q_tokens, k_tokens, map_min, map_max);
      if (hit.hovered) {
        state.hover_next = {hit.row, hit.col};
        drawCellTooltip(*t, b, h, hit.row, hit.col, q_tokens, k_tokens);
      }
      // Fully masked query rows: a red mark right of the map.
      ImDrawList* list = ImGui::GetWindowDrawList();
      const float cell_h = map_h / static_cast<float>(t->L);
      for (int64_t i = 0; i < t->L; ++i) {
        if (!t->fully_masked.data[b * t->L + i]) continue;
        list->AddRectFilled(ImVec2(map_max.x + 3, map_min.y + cell_h * i),
                            ImVec2(map_max.x + 8, map_min.y + cell_h * (i + 1)), IM_COL32(230, 60, 60, 255));
      }
      ImGui::SetCursorScreenPos(ImVec2(map_max.x + 12, map_min.y));
      drawColorBar(state, side.view.colormap, side.range, side.log_scale, k == 0 ? "%+.3g" : "%.3g",
                   ImVec2(bar_w - 12, map_h));
    }

    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + line_h + map_h + col_label_h + 4));
    ImGui::TextDisabled("rows: query tokens   columns: key tokens   grey hatched: masked (-inf, not a number)");
    ImGui::TextDisabled("yellow outline: the map Ctrl+S exports (click a map to choose)");
    if (tex.fully_masked_rows > 0) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.45f, 1.0f));
      ImGui::TextWrapped("%lld fully masked row%s (red marks): every key is masked, so PyTorch's softmax "
                         "returns NaN there; shown as masked with probability %s.",
                         static_cast<long long>(tex.fully_masked_rows), tex.fully_masked_rows == 1 ? "" : "s",
                         t->fill == MaskFill::NegInf ? "0" : "1/S (the -1e9 fill gives a uniform row)");
      ImGui::PopStyleColor();
    }
  }
  ImGui::End();
}

}  // namespace attnscope
