// The combined allowed/blocked mask [L, S] of the focused layer and batch item, and each
// component of the core trace on its own. Imported maps carry no mask.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui/features/mask/mask.h"
#include "gui/jobs/export_jobs.h"
#include "gui/render/heatmap_widget.h"
#include "gui/shell/panels.h"

namespace attnscope {

namespace {

// Padding off over a text whose shorter lines were padded: "<pad> keys are attended (5 in
// item 1): tick padding to mask them"; "" when no "<pad>" key is unmasked.
std::string unmaskedPadNote(const AppState& state, const ViewModel& v) {
  if (v.source != ViewSource::CoreTrace || state.settings.source != InputSource::Text || state.settings.mask.padding)
    return "";
  std::string where;
  int64_t pads = 0;
  for (size_t b = 0; b < v.key_tokens.size(); ++b) {
    const auto n = std::count(v.key_tokens[b].begin(), v.key_tokens[b].end(), std::string("<pad>"));
    if (n == 0) continue;
    pads += n;
    where += (where.empty() ? "" : ", ") + std::to_string(n) + " in item " + std::to_string(b);
  }
  if (pads == 0) return "";
  return "<pad> keys are attended (" + where + "): tick padding to mask them";
}

// The layer's mask string with the Export button at its top right, the allowed cells and
// the fully masked rows.
void drawMaskHeader(AppState& state, const ViewModel& v, int64_t layer) {
  const ViewTextures& tex = state.gpu.textures;
  const int64_t cells = v.mapL() * v.mapS();
  // The header wraps left of the Export button, which sits at the top right of it: a
  // long mask string never runs under the button.
  const float button_w = ImGui::CalcTextSize("Export").x + 2 * ImGui::GetStyle().FramePadding.x;
  const float button_x = std::max(ImGui::GetCursorPosX() + 40.0f, ImGui::GetWindowContentRegionMax().x - button_w);
  ImGui::PushTextWrapPos(button_x - ImGui::GetStyle().ItemSpacing.x);
  // The layer's own mask (a trained model's is causal whatever the sandbox's setting).
  const std::string& mask_name = v.maps[layer].mask_name;
  ui::text(state.script.layout, "mask_header", ui::plainText(), "mask = %s   batch item %lld",
           (mask_name.empty() ? state.settings.mask.toString() : mask_name).c_str(), static_cast<long long>(tex.batch_item));
  ImGui::PopTextWrapPos();
  ImGui::SameLine(button_x);
  if (ui::smallButton(state.script.layout, "export_mask_button", "Export##mask")) {
    state.view.map_kind = MapKind::Mask;
    requestFigureExport(state.exports, state.view, "mask");
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("export the combined mask as a figure");
  if (const std::string note = unmaskedPadNote(state, v); !note.empty()) {
    warningText(state.script.layout, "pad_note", note);
    state.script.layout.recordText("pad_note", note);
  }
  // A tiled source's counts are the real map's (its drawn mask is the overview's blocks).
  const int64_t allowed_cells = tex.allowed_cells[layer], fully_masked = tex.fully_masked_rows[layer];
  ImGui::Text("allowed %lld / %lld cells (%.1f%%)", static_cast<long long>(allowed_cells),
              static_cast<long long>(cells), 100.0 * static_cast<double>(allowed_cells) / static_cast<double>(cells));
  if (v.tiled && ImGui::IsItemHovered())
    ImGui::SetTooltip("cells of the real %lld x %lld map; the picture pools it: a block is allowed when one of its cells is",
                      static_cast<long long>(v.mapL()), static_cast<long long>(v.mapS()));
  if (fully_masked > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.45f, 1.0f));
    ImGui::Text("fully masked rows: %lld", static_cast<long long>(fully_masked));
    ImGui::PopStyleColor();
  } else {
    ImGui::Text("fully masked rows: 0");
  }
}

// The combined mask at `pos`, `size`; a click selects it for Ctrl+S. Returns its view (the
// components reuse it).
HeatmapView drawCombinedMask(AppState& state, const ViewModel& v, int64_t layer, ImVec2 pos, ImVec2 size) {
  const ViewTextures& tex = state.gpu.textures;
  HeatmapView view;
  view.texture = tex.masks[layer];
  view.rows = v.L;
  view.cols = v.S;
  view.colormap = state.settings.prob_colormap;
  view.range = ValueRange{0.0f, 1.6f};  // allowed (1) in a calm mid-map colour
  view.outlined = state.view.map_kind == MapKind::Mask;  // Ctrl+S exports the mask
  ImGui::SetCursorScreenPos(pos);
  view.name = "mask_combined";
  showResultState(state, view);
  const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), view, size);
  view.outlined = false;
  if (hit.clicked && state.view.map_kind != MapKind::Mask) {
    state.view.map_kind = MapKind::Mask;
    markStateChanged(state);
  }
  if (hit.hovered) {
    state.view.hover_next = {hit.row, hit.col};
    const bool allowed = v.isAllowed(layer, tex.batch_item, hit.row, hit.col);
    ImGui::SetTooltip("query %lld may %sattend key %lld", static_cast<long long>(hit.row),
                      allowed ? "" : "NOT ", static_cast<long long>(hit.col));
  }
  return view;
}

// One small image per mask term in a grid of width `width` from `top_left`, or why there is none.
void drawMaskComponents(AppState& state, const ViewModel& v, int64_t layer, HeatmapView view, ImVec2 top_left,
                        float width) {
  const ViewTextures& tex = state.gpu.textures;
  const AttentionTrace* t = v.maps[layer].trace.get();  // components; null for imported maps
  const size_t parts = tex.components[layer].size();
  const float aspect = static_cast<float>(v.S) / static_cast<float>(v.L);
  const float text_h = ImGui::GetTextLineHeightWithSpacing();
  // Two columns when more than two terms, unless a term's kind ("segments") would not fit
  // over its image: then one.
  const auto cellFor = [&](int n) { return std::floor(std::min(width / static_cast<float>(n) - 8, 90.0f)); };
  int columns = parts > 2 ? 2 : 1;
  for (size_t c = 0; c < parts && columns == 2; ++c) {
    const std::string& name = t->mask.components[c].name;
    if (ImGui::CalcTextSize(name.substr(0, name.find(':')).c_str()).x > cellFor(2)) columns = 1;
  }
  const float cell = cellFor(columns);
  for (size_t c = 0; c < parts && cell > 16; ++c) {
    const float x = top_left.x + static_cast<float>(c % columns) * (cell + 8);
    const float y = top_left.y + static_cast<float>(c / columns) * (cell + 2 * text_h + 4);
    ImGui::SetCursorScreenPos(ImVec2(x, y));
    // The term's name, or its kind alone ("segments" for "segments:4,6"): never into the next.
    const std::string& name = t->mask.components[c].name;
    const std::vector<std::string> forms{name, name.substr(0, name.find(':'))};
    ui::textUnformatted(state.script.layout, "mask_component_" + std::to_string(c) + "_title",
                        fitText(forms[firstFitting(forms, cell)], cell));
    ImGui::SetCursorScreenPos(ImVec2(x, y + text_h));
    view.texture = tex.components[layer][c];
    const float w = std::floor(std::min(cell, cell * aspect)), h = std::floor(w / aspect);
    view.name = "mask_component_" + std::to_string(c);
    drawHeatmap(heatmapCanvas(state), view, ImVec2(w, h));
    ImGui::SetCursorScreenPos(ImVec2(x, y + text_h + h + 2));
    ImGui::TextDisabled("%lld ok", static_cast<long long>(tex.component_allowed[layer][c]));
  }
  if (parts > 0) return;
  ImGui::SetCursorScreenPos(top_left);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::PushTextWrapPos(ImGui::GetWindowContentRegionMax().x);
  ImGui::TextUnformatted(v.tiled ? "tiled: the terms are not drawn one by one" : "no mask terms: every query attends every key");
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

// Why there is no mask to draw ("" when there is one).
const char* noMaskReason(const ViewModel* v, const ViewTextures& tex) {
  if (!v || tex.probs.empty()) return "no attention computed yet";
  if (!tex.hasMask())
    return "imported maps carry no mask: every cell is shown as stored (masked keys are the ones with probability 0)";
  return "";
}

}  // namespace

float maskHeight(const AppState& state, const ColumnSpace& space) {
  const float body_h = space.height;
  return chosenSize(state.view.panel_sizes.mask, body_h, std::floor(body_h * (space.above > 0 ? 0.30f : 0.36f)), kMinBand,
                    body_h - space.above - kMinBand);
}

void drawMaskPanel(AppState& state) {
  if (beginPanelWindow(state, "Mask", "mask")) {
    const ViewModel* v = state.compute.view.get();
    const ViewTextures& tex = state.gpu.textures;
    if (const char* why = noMaskReason(v, tex); *why) {
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextDisabled("%s", why);
      ImGui::PopTextWrapPos();
    } else {
      const int64_t layer = state.view.focus.layer;
      drawMaskHeader(state, *v, layer);
      // Combined mask on the left, one small image per component in a grid to its right.
      const float aspect = static_cast<float>(v->S) / static_cast<float>(v->L);
      const ImVec2 avail = ImGui::GetContentRegionAvail();
      const float big_side = std::floor(std::min(avail.y - 4, avail.x * 0.55f));
      const float big_h = std::max(24.0f, std::floor(std::min(big_side, big_side / aspect)));
      const float big_w = std::max(24.0f, std::floor(big_h * aspect));
      const ImVec2 origin = ImGui::GetCursorScreenPos();
      const HeatmapView view = drawCombinedMask(state, *v, layer, ImVec2(origin.x + 2, origin.y + 2), ImVec2(big_w, big_h));
      const float right_x = origin.x + big_w + 14;
      drawMaskComponents(state, *v, layer, view, ImVec2(right_x, origin.y), origin.x + avail.x - right_x);
      ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + big_h + 6));
    }
  }
  ImGui::End();
}

void maskToJson(const AppState& state, nlohmann::json& line) {
  const ViewTextures& tex = state.gpu.textures;
  if (!tex.hasMask()) return;
  const size_t layer = static_cast<size_t>(std::min(state.view.focus.layer, tex.layers - 1));  // the focused layer's mask
  line["allowed_cells"] = tex.allowed_cells[layer];
  line["fully_masked_rows"] = tex.fully_masked_rows[layer];
  if (const ViewModel* v = state.compute.view.get(); v && v->allowed_counts.size() == static_cast<size_t>(v->layers * v->B))
    line["allowed_cells_by_item"] = std::vector<int64_t>(v->allowed_counts.begin() + static_cast<int64_t>(layer) * v->B,
                                                         v->allowed_counts.begin() + static_cast<int64_t>(layer + 1) * v->B);
}

}  // namespace attnscope
