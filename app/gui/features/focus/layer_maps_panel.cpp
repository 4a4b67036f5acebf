// The map kind chooser over the focus view (probabilities, scores, rollout, flow: one radio
// button per chooser row of the MapKind registry) and the focus view of an across-layer
// kind: the rollout or flow map after the focused layer, rows = output positions, columns =
// input tokens, with its colour bar, tooltip and Export button. Rollout and flow are greyed
// out, with the reason as their tooltip, for sources that cannot have them.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gui/features/focus/layer_maps.h"
#include "gui/jobs/export_jobs.h"
#include "gui/render/heatmap_widget.h"
#include "gui/shell/panels.h"

namespace attnscope {

void drawMapKindChooser(AppState& state) {
  ImGui::TextUnformatted("map:");
  for (const MapKindInfo& info : mapKinds()) {
    if (!info.chooser) continue;
    const std::string why = layerMapsUnavailable(state, info.kind);
    ImGui::SameLine();
    if (!why.empty()) ImGui::BeginDisabled();
    if (ui::radioButton(state.script.layout, std::string("map_kind_") + info.name, info.label,
                        state.view.map_kind == info.kind) &&
        state.view.map_kind != info.kind) {
      state.view.map_kind = info.kind;
      markStateChanged(state);
    }
    if (!why.empty()) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      if (!why.empty()) ImGui::SetTooltip("%s", why.c_str());
      else if (info.across_layers)
        ImGui::SetTooltip("%s: how much each output position draws from each input token after every layer "
                          "(Abnar and Zuidema 2020; heads averaged, residual added)", info.label);
    }
  }
}

namespace {

// Building, failed or cancelled: progress and Cancel, or the message and Build again.
void drawLayerMapsProgress(AppState& state, const MapKindInfo& info) {
  LayerMapsState& job = state.feature<LayerMapsState>();
  if (job.building()) {
    ImGui::Text("building %s for every layer ...", info.label);
    ui::progressBar(state.script.layout, "layer_maps_progress", static_cast<float>(job.progress()), ImVec2(260, 0));
    ImGui::SameLine();
    if (ui::button(state.script.layout, "layer_maps_cancel", "Cancel##layer_maps")) cancelLayerMaps(state);
  } else if (!job.error.empty()) {
    errorText(job.error);
    if (ui::button(state.script.layout, "layer_maps_retry", "Build again##layer_maps")) retryLayerMaps(state);
  } else {
    ImGui::TextDisabled("building %s ...", info.label);
  }
}

}  // namespace

void drawLayerMapsView(AppState& state) {
  const MapKind kind = state.view.map_kind;
  const MapKindInfo& info = mapKindInfo(kind);
  const ViewModel* v = state.compute.view.get();
  const ViewTextures& tex = state.gpu.textures;
  if (!v) {
    ImGui::TextDisabled("no attention computed yet");
    return;
  }
  const std::string why = layerMapsUnavailable(state, kind);
  if (!why.empty()) {
    ImGui::TextWrapped("%s: %s", info.label, why.c_str());
    return;
  }
  const ViewTextures::AcrossLayers* maps = tex.builtFrom(v) ? tex.acrossLayers(kind) : nullptr;
  if (!maps) {
    drawLayerMapsProgress(state, info);
    return;
  }
  const int64_t layer = std::clamp<int64_t>(state.view.focus.layer, 0, v->layers - 1);
  const int64_t b = tex.batch_item, L = v->L;
  const std::vector<std::string>& tokens = v->query_tokens[b];  // self-attention: inputs = queries
  const LabelWidths& widths = tokenLabelWidths(state.ui.label_widths, *v, b);
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float label_w = widths.query + 8.0f, label_h = widths.query + 8.0f, bar_w = 58.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float side = std::floor(std::max(16.0f, std::min(avail.x - label_w - bar_w, avail.y - 4.2f * line_h - label_h)));

  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::SetCursorScreenPos(ImVec2(origin.x + label_w, origin.y));
  if (ui::smallButton(state.script.layout, std::string("export_") + info.name + "_button", "Export##layer_map"))
    requestFigureExport(state.exports, state.view, info.name);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("export this map as a figure (Ctrl+S; formats under Export)");
  ImGui::SameLine();
  const std::string title = acrossLayersTitle(kind, v->maps[layer].name);
  ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.2f, 1.0f), "%s", title.c_str());

  const ImVec2 map_min(origin.x + label_w, origin.y + line_h);
  ImGui::SetCursorScreenPos(map_min);
  HeatmapView view;
  view.texture = maps->maps[static_cast<size_t>(layer)];
  view.rows = view.cols = L;
  view.colormap = state.settings.prob_colormap;
  const ValueRange range{0.0f, maps->max[static_cast<size_t>(layer)] > 0.0f ? maps->max[static_cast<size_t>(layer)] : 1.0f};
  view.range = range;
  view.outlined = true;  // Ctrl+S exports it
  view.name = "focus_layer_map";
  showResultState(state, view);
  const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), view, ImVec2(side, side));
  const ImVec2 map_max(map_min.x + side, map_min.y + side);
  drawAxisLabels({&tokens, 0, L}, {&tokens, 0, L}, map_min, map_max);
  if (hit.hovered) {
    state.view.hover_next = {hit.row, hit.col};
    const float value = v->acrossLayers(kind)->map(layer, b)[hit.row * L + hit.col];
    ImGui::BeginTooltip();
    ImGui::TextDisabled("%s", title.c_str());
    ImGui::Text("output position  %s  (i = %lld)", visibleToken(tokens[hit.row]).c_str(), static_cast<long long>(hit.row));
    ImGui::Text("input token      %s  (j = %lld)", visibleToken(tokens[hit.col]).c_str(), static_cast<long long>(hit.col));
    ImGui::Separator();
    ImGui::Text("%-16s %.6g", info.label, value);
    ImGui::EndTooltip();
  }
  ImGui::SetCursorScreenPos(ImVec2(map_max.x + 12, map_min.y));
  drawColorBar(heatmapCanvas(state), {view.colormap, range, false, "%.3g", ""}, ImVec2(bar_w - 12, side));

  ImGui::SetCursorScreenPos(ImVec2(origin.x, map_max.y + label_h + 4));
  ImGui::TextDisabled("rows: output positions after %s   columns: input tokens   each row sums to 1",
                      v->maps[layer].name.c_str());
  ImGui::TextDisabled("A_l = rownorm(0.5 x head mean + 0.5 I); %s",
                      kind == MapKind::Rollout ? "rollout = A_l ... A_0"
                                               : "flow = max flow through the layers with capacities A_k, row-normalised");
  ImGui::TextDisabled("Up/Down or a grid tile: another layer   batch item %lld", static_cast<long long>(b));
}

}  // namespace attnscope
