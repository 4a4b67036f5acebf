// The focus panel's "Patching" tab: the corrupt text, the answer and wrong tokens, the sweep's
// progress and the two tables of the normalised effect with their colour scale. Every value
// drawn comes from the sweep's result (jobs/patch_worker.h); every change is a call of patching.cpp.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui/features/patching/patching.h"
#include "gui/shell/app_state.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

const ImVec4 kGood(0.45f, 0.85f, 0.45f, 1.0f), kBad(1.0f, 0.45f, 0.35f, 1.0f);
constexpr float kRowLabelWidth = 30.0f;

// An edit of an input: saved with the settings (the next frame posts a sweep for it).
void edited(AppState& state) {
  settingsEdited(state);
  markStateChanged(state);
}

void drawCorruptText(AppState& state) {
  const ViewModel* v = state.compute.view.get();
  ImGui::TextDisabled("clean: the text box (%lld tokens); corrupt: the same length, a few tokens changed",
                      static_cast<long long>(v ? v->L : 0));
  const float width = ImGui::GetContentRegionAvail().x - 110.0f;
  if (ui::inputTextMultiline(state.script.layout, "patching_corrupt_box", "##patch_corrupt", &state.settings.patch_corrupt,
                             ImVec2(std::max(width, 120.0f), ImGui::GetTextLineHeight() * 3.2f)))
    edited(state);
  ImGui::SameLine();
  if (ui::button(state.script.layout, "patching_copy_clean", "copy clean")) {
    state.settings.patch_corrupt = state.settings.model_text;
    edited(state);
  }
  const PatchingState& p = state.feature<PatchingState>();
  if (!p.result) return;
  const std::string line = patchLengthLine(*p.result);
  if (!line.empty())
    ui::text(state.script.layout, "patching_length",
             ui::coloredText(p.result->clean_tokens == p.result->corrupt_tokens ? kGood : kBad), "%s", line.c_str());
}

void drawTokenBox(AppState& state, const char* name, const char* hint, std::string* text) {
  ImGui::SetNextItemWidth(110.0f);
  if (ui::inputTextWithHint(state.script.layout, name, (std::string("##") + name).c_str(), hint, text)) edited(state);
}

// The answer and wrong boxes, and the last position's predictions to pick them from.
void drawTokens(AppState& state) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("answer");
  ImGui::SameLine();
  drawTokenBox(state, "patching_answer_box", "type a token", &state.settings.patch_answer);
  ImGui::SameLine();
  ImGui::TextUnformatted("wrong");
  ImGui::SameLine();
  drawTokenBox(state, "patching_wrong_box", "type a token", &state.settings.patch_wrong);
  const ViewModel* v = state.compute.view.get();
  if (!v || v->predictions.empty()) return;
  ImGui::TextDisabled("pick from the predictions after the clean text:");
  const std::vector<TokenGuess>& top = v->predictions.back().top;
  for (size_t k = 0; k < top.size(); ++k) {
    ImGui::PushID(static_cast<int>(k));
    if (k > 0) ImGui::SameLine(0.0f, 14.0f);
    ImGui::Text("'%s' %.0f%%", top[k].label.c_str(), 100.0 * top[k].prob);
    ImGui::SameLine();
    if (ui::smallButton(state.script.layout, "patching_pick_answer_" + std::to_string(k), "A")) pickPatchToken(state, k, true);
    ImGui::SameLine(0.0f, 2.0f);
    if (ui::smallButton(state.script.layout, "patching_pick_wrong_" + std::to_string(k), "W")) pickPatchToken(state, k, false);
    ImGui::PopID();
  }
}

void drawStatus(AppState& state) {
  PatchingState& p = state.feature<PatchingState>();
  if (p.running) {
    const double fraction = p.worker ? std::max(0.0, p.worker->progress()) : 0.0;
    ui::progressBar(state.script.layout, "patching_progress", static_cast<float>(fraction), ImVec2(220.0f, 0.0f), "sweeping");
    ImGui::SameLine();
    if (ui::button(state.script.layout, "patching_cancel", "Cancel")) cancelPatching(state);
    return;
  }
  if (!p.result) return;
  const PatchResult& r = *p.result;
  if (!r.why_not.empty()) {
    ui::text(state.script.layout, "patching_why_not", ui::coloredText(kBad), "%s", r.why_not.c_str());
    if (p.cancelled && ui::button(state.script.layout, "patching_rerun", "sweep again")) sweepAgain(state);
    return;
  }
  ImGui::Text("logit('%s') - logit('%s'): clean %.3f, corrupt %.3f (%lld patched runs in %.0f ms)", r.answer.label.c_str(),
              r.wrong.label.c_str(), r.tables->clean, r.tables->corrupt,
              static_cast<long long>(r.layers * (r.heads + r.clean_tokens)), r.ms);
  ImGui::SameLine();
  if (ui::button(state.script.layout, "patching_export", "export tables")) requestPatchingExport(state);
}

struct TableView {
  std::string name;
  const std::vector<float>* normalised;  // [rows, cols]
  const std::vector<std::string>* row_labels;
  const Tensor* raw;                     // the metric of each patched run
  int64_t rows, cols;
  const std::vector<std::string>* col_labels;
  float range;
};

// Column labels under the table: every k-th, so that none overlap.
void drawColumnLabels(const TableView& t, ImVec2 min, float cell_w) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float widest = std::max(ImGui::CalcTextSize("H00").x, cell_w);
  const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(ImGui::CalcTextSize("MMM").x / widest)));
  for (int64_t c = 0; c < t.cols; c += every) {
    const std::string label = (*t.col_labels)[c].substr(0, 4);
    draw->AddText(ImVec2(min.x + c * cell_w + 1.0f, min.y + 2.0f), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  }
}

// One table at the cursor, `size` px: cells coloured on the diverging scale, "L0".. left,
// column labels under it, the hovered cell's values in a tooltip.
void drawTable(AppState& state, const TableView& t, ImVec2 size) {
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float label_h = ImGui::GetTextLineHeightWithSpacing();
  const float cell_w = (size.x - kRowLabelWidth) / static_cast<float>(t.cols);
  const float cell_h = std::min(cell_w * 1.5f + 6.0f, (size.y - label_h) / static_cast<float>(t.rows));
  const ImVec2 min(origin.x + kRowLabelWidth, origin.y);
  ImGui::SetCursorScreenPos(min);
  ui::invisibleButton(state.script.layout, t.name, ("##" + t.name).c_str(), ImVec2(cell_w * t.cols, cell_h * t.rows));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int64_t r = 0; r < t.rows; ++r) {
    draw->AddText(ImVec2(origin.x, min.y + (r + 0.5f) * cell_h - ImGui::GetTextLineHeight() * 0.5f),
                  ImGui::GetColorU32(ImGuiCol_Text), (*t.row_labels)[r].c_str());
    for (int64_t c = 0; c < t.cols; ++c) {
      const float v = (*t.normalised)[r * t.cols + c];
      const Rgb rgb = std::isnan(v) ? kMaskedColor : colormapColor(Colormap::Diverging, v, -t.range, t.range);
      draw->AddRectFilled(ImVec2(min.x + c * cell_w, min.y + r * cell_h), ImVec2(min.x + (c + 1) * cell_w, min.y + (r + 1) * cell_h),
                          IM_COL32(rgb[0], rgb[1], rgb[2], 255));
    }
  }
  drawColumnLabels(t, ImVec2(min.x, min.y + cell_h * t.rows), cell_w);
  if (hovered) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int64_t r = std::clamp<int64_t>(static_cast<int64_t>((mouse.y - min.y) / cell_h), 0, t.rows - 1);
    const int64_t c = std::clamp<int64_t>(static_cast<int64_t>((mouse.x - min.x) / cell_w), 0, t.cols - 1);
    ImGui::SetTooltip("L%lld %s: normalised %.3f, metric %.3f", static_cast<long long>(r), (*t.col_labels)[c].c_str(),
                      static_cast<double>((*t.normalised)[r * t.cols + c]), static_cast<double>(t.raw->data[r * t.cols + c]));
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + cell_h * t.rows + label_h));
}

void drawTables(AppState& state, const PatchResult& r) {
  const TableView head_table{"patching_heads", &r.heads_normalised, &r.layer_labels, &r.tables->heads, r.layers, r.heads, &r.head_labels,
                             r.range};
  const TableView resid_table{"patching_resid", &r.resid_normalised, &r.layer_labels, &r.tables->resid, r.layers, r.clean_tokens,
                              &r.clean_labels, r.range};
  const ColorBarView bar{Colormap::Diverging, {-r.range, r.range}, false, "%.2g", "patching_colorbar"};
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float bar_w = colorBarWidth(bar) + 8.0f, height = std::max(avail.y - 4.0f, 60.0f);
  const float heads_w = std::min(avail.x * 0.3f, kRowLabelWidth + 26.0f * static_cast<float>(r.heads));
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImGui::TextDisabled("heads: z patched");
  drawTable(state, head_table, ImVec2(heads_w, height - ImGui::GetTextLineHeightWithSpacing()));
  ImGui::SetCursorScreenPos(ImVec2(top.x + heads_w + 12.0f, top.y));
  ImGui::TextDisabled("residual stream entering each layer, by position");
  ImGui::SetCursorScreenPos(ImVec2(top.x + heads_w + 12.0f, top.y + ImGui::GetTextLineHeightWithSpacing()));
  drawTable(state, resid_table, ImVec2(avail.x - heads_w - 12.0f - bar_w, height - ImGui::GetTextLineHeightWithSpacing()));
  ImGui::SetCursorScreenPos(ImVec2(top.x + avail.x - bar_w + 6.0f, top.y + ImGui::GetTextLineHeightWithSpacing()));
  drawColorBar(heatmapCanvas(state), bar, ImVec2(bar_w - 8.0f, std::min(height * 0.8f, 160.0f)));
}

}  // namespace

void drawPatchingPanel(AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->source != ViewSource::ModelRun) {
    ImGui::TextDisabled("activation patching runs on a trained model's text (choose one under Models)");
    return;
  }
  drawCorruptText(state);
  drawTokens(state);
  drawStatus(state);
  const PatchingState& p = state.feature<PatchingState>();
  if (p.result && p.result->tables) drawTables(state, *p.result);
}

}  // namespace attnscope
