// Query focus (the focus panel's "Query focus" tab): the query tokens of the focused batch
// item as buttons (click one, Ctrl+click to add more), and for every (layer, head) a bar
// chart of the chosen rows' attention over the keys, averaged or summed. The bars come from
// QueryFocusState (core queryFocus, recomputed when the choice changes); this panel draws.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gui/features/query_focus/query_focus.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

constexpr ImU32 kBarColor = IM_COL32(90, 160, 230, 255);
constexpr ImU32 kChartBackground = IM_COL32(40, 42, 48, 255);
const ImVec4 kChosen(0.95f, 0.65f, 0.15f, 1.0f);

// The query tokens as buttons, wrapping; a click chooses, Ctrl+click adds or removes.
void drawQueryButtons(AppState& state, const std::vector<std::string>& tokens) {
  QueryFocusView& choice = state.view.query_choice;
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool chosen = std::binary_search(choice.queries.begin(), choice.queries.end(), static_cast<int64_t>(i));
    const std::string label = visibleToken(tokens[i]);
    const float width = ImGui::CalcTextSize(label.c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + width > right) ImGui::NewLine();
    }
    // An unlabelled button with the token drawn on it: tokens may hold "##" (WordPiece).
    if (chosen) ImGui::PushStyleColor(ImGuiCol_Button, kChosen);
    ImGui::PushID(static_cast<int>(i));
    const bool clicked =
        ui::button(state.script.layout, "query_token_" + std::to_string(i), "##query", ImVec2(width, ImGui::GetFrameHeight()));
    ImGui::PopID();
    if (chosen) ImGui::PopStyleColor();
    const ImVec2 min = ImGui::GetItemRectMin();
    ImGui::GetWindowDrawList()->AddText(ImVec2(min.x + ImGui::GetStyle().FramePadding.x, min.y + ImGui::GetStyle().FramePadding.y),
                                        ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
    if (clicked) {
      chooseQuery(state, static_cast<int64_t>(i), ImGui::GetIO().KeyCtrl);
      markStateChanged(state);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("query %zu: click to focus it, Ctrl+click to add it", i);
  }
}

// A chart's title in its forms, longest first: "layer 2, head 11", "L2 H11", "H11".
std::vector<std::string> chartTitles(const std::string& layer_name, int64_t layer, int64_t head, bool layered) {
  const std::string h = std::to_string(head), l = std::to_string(layer);
  return {(layered ? layer_name + ", " : std::string()) + "head " + h, (layered ? "L" + l + " " : std::string()) + "H" + h,
          "H" + h};
}

// One (layer, head) chart: bars over the keys on [0, top], hover names the key.
void drawChart(AppState& state, const float* bars, int64_t S, const std::vector<std::string>& keys, float top,
               ImVec2 pos, ImVec2 size, const std::string& name, const std::string& head_name) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(pos, ImVec2(pos.x + size.x, pos.y + size.y), kChartBackground);
  const float bar_w = size.x / static_cast<float>(S);
  for (int64_t j = 0; j < S; ++j) {
    const float h = std::clamp(bars[j] / top, 0.0f, 1.0f) * size.y;
    const float x0 = pos.x + bar_w * static_cast<float>(j);
    const float x1 = std::max(x0 + 1.0f, x0 + bar_w - (bar_w >= 4.0f ? 1.0f : 0.0f));
    list->AddRectFilled(ImVec2(x0, pos.y + size.y - h), ImVec2(x1, pos.y + size.y), kBarColor);
  }
  ImGui::SetCursorScreenPos(pos);
  ui::invisibleButton(state.script.layout, name, ("##" + name).c_str(), size);
  if (ImGui::IsItemHovered()) {
    const int64_t j = std::clamp<int64_t>(static_cast<int64_t>((ImGui::GetIO().MousePos.x - pos.x) / bar_w), 0, S - 1);
    ImGui::SetTooltip("%s\nkey %s (j = %lld): %.4f", head_name.c_str(), visibleToken(keys[j]).c_str(), static_cast<long long>(j), bars[j]);
  }
}

}  // namespace

void drawQueryFocusPanel(AppState& state) {
  const ViewModel* view = shownView(state);
  if (!view) {
    ImGui::TextDisabled("no attention computed yet");
    return;
  }
  const int64_t b = std::clamp<int64_t>(state.view.focus.batch_item, 0, view->B - 1);
  QueryFocusView& choice = state.view.query_choice;
  ImGui::TextDisabled("query tokens of batch item %lld: click one, Ctrl+click to add more", static_cast<long long>(b));
  // As many lines as the tokens need (estimated from their widths), at most 3; then it scrolls.
  float tokens_w = 0.0f;
  for (const std::string& token : view->query_tokens[b])
    tokens_w += ImGui::CalcTextSize(visibleToken(token).c_str()).x + 2 * ImGui::GetStyle().FramePadding.x + ImGui::GetStyle().ItemSpacing.x;
  const float lines = std::min(3.0f, std::ceil(tokens_w / std::max(1.0f, ImGui::GetContentRegionAvail().x - 20.0f)));
  ImGui::BeginChild("query_tokens", ImVec2(0, lines * ImGui::GetFrameHeightWithSpacing() + 4.0f));
  drawQueryButtons(state, view->query_tokens[b]);
  ImGui::EndChild();
  int combine = static_cast<int>(choice.combine);
  bool changed = ui::radioButton(state.script.layout, "query_mean", "mean", &combine, static_cast<int>(RowCombine::Mean));
  ImGui::SameLine();
  changed |= ui::radioButton(state.script.layout, "query_sum", "sum", &combine, static_cast<int>(RowCombine::Sum));
  if (changed) {
    choice.combine = static_cast<RowCombine>(combine);
    markStateChanged(state);
  }
  const QueryFocusState& q = state.feature<QueryFocusState>();
  if (q.bars.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("  choose a query token to see its attention row in every head");
    return;
  }
  const int64_t chosen = static_cast<int64_t>(q.choice.queries.size());
  ImGui::SameLine();
  if (ui::smallButton(state.script.layout, "query_export", "Export JSON")) requestQueryFocusExport(state);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("write these bars [layers][heads][keys] with the queries and tokens as JSON");
  ImGui::SameLine();
  ImGui::Text("  %s of %lld quer%s over the keys, every layer and head (bars 0 to %lld)",
              q.choice.combine == RowCombine::Mean ? "mean" : "sum", static_cast<long long>(chosen),
              chosen == 1 ? "y" : "ies", static_cast<long long>(q.choice.combine == RowCombine::Mean ? 1 : chosen));

  // Charts: rows = layers, columns = heads, each titled; one scale for all (a row sums to
  // 1, so the mean stays within [0, 1] and the sum within [0, queries]).
  const float top = q.choice.combine == RowCombine::Mean ? 1.0f : static_cast<float>(chosen);
  const int64_t layers = view->layers, H = view->H, S = view->S;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line_h = ImGui::GetTextLineHeightWithSpacing(), gap = 10.0f;
  const float chart_w = std::max(20.0f, std::floor((avail.x - gap * static_cast<float>(H - 1)) / static_cast<float>(H)));
  const float chart_h = std::max(16.0f, std::floor((avail.y - 4) / static_cast<float>(layers) - line_h - gap));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float* bars = q.bars.data.data();  // [layers, H, S]
  // One title form for every chart, the longest the widest title fits: titles never run into
  // the next chart (the chart's tooltip names the head in full).
  const size_t title_form =
      firstFitting(chartTitles(view->maps[layers - 1].name, layers - 1, H - 1, layers > 1), chart_w);
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t h = 0; h < H; ++h) {
      const ImVec2 pos(origin.x + static_cast<float>(h) * (chart_w + gap),
                       origin.y + static_cast<float>(l) * (chart_h + line_h + gap));
      ImGui::SetCursorScreenPos(pos);
      const bool focused = l == state.view.focus.layer && h == state.view.focus.head;
      const std::string suffix = std::to_string(l) + "_" + std::to_string(h);
      const std::string title =
          fitText(chartTitles(view->maps[l].name, l, h, layers > 1)[title_form], chart_w);
      const std::string title_name = "query_title_" + suffix;
      if (focused) ui::text(state.script.layout, title_name, ui::coloredText(ImVec4(1.0f, 0.8f, 0.2f, 1.0f)), "%s", title.c_str());
      else ui::textUnformatted(state.script.layout, title_name, title);
      const std::string head_name = (layers > 1 ? view->maps[l].name + ", " : "") + "head " + std::to_string(h);
      drawChart(state, bars + (l * H + h) * S, S, view->key_tokens[b], top, ImVec2(pos.x, pos.y + line_h),
                ImVec2(chart_w, chart_h), "query_chart_" + suffix, head_name);
    }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + static_cast<float>(layers) * (chart_h + line_h + gap)));
  ImGui::Dummy(ImVec2(1, 1));
}

}  // namespace attnscope
