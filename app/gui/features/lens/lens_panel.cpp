// The logit lens table: one row per lens layer (the embeddings, then after each layer), one
// column per position, each cell the top-1 token on its probability's colour (viridis, 0 to
// 1). The first column (layer names) and the header row (the input tokens) stay in view
// while the table scrolls. Cells are drawn for the visible window only (L can be 1024); a lens
// made column by column draws a column still being computed as grey dots.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gui/features/lens/lens.h"
#include "gui/shell/panels.h"
#include "view/colormap.h"
#include "view/number_text.h"

namespace attnscope {
namespace {

constexpr float kCellW = 56.0f;       // in the predictions panel
constexpr float kLargeCellW = 104.0f; // over the focus view: tokens of about 12 characters whole
const ImVec4 kPinColor(1.0f, 0.8f, 0.2f, 1.0f);  // as the predictions panel's pin

std::string rowName(int64_t layer) { return layer == 0 ? "emb" : "L" + std::to_string(layer); }

// Geometry of the table in one frame: `origin` is cell space (0, 0) on screen, scrolled.
struct LensGrid {
  ImVec2 origin, clip_min, clip_max;
  float label_w = 0, cell_w = kCellW, cell_h = 0;
  ImVec2 cellMin(int64_t layer, int64_t position) const {
    return ImVec2(origin.x + label_w + position * cell_w, origin.y + cell_h * (layer + 1));
  }
};

// top: the cell's best guess, or null while its column is computed (grey, dots). Returns
// the text drawn.
std::string drawCell(const LensGrid& g, const TokenGuess* top, ImVec2 min, bool outlined) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImVec2 max(min.x + g.cell_w - 1, min.y + g.cell_h - 1);
  if (!top) {
    list->AddRectFilled(min, max, IM_COL32(60, 60, 64, 255));
    list->AddText(ImVec2(min.x + 3, min.y + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), "...");
    return "...";
  }
  const Rgb c = colormapColor(Colormap::Viridis, static_cast<float>(top->prob), 0.0f, 1.0f);
  list->AddRectFilled(min, max, IM_COL32(c[0], c[1], c[2], 255));
  const bool light = 0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2] > 140.0f;
  const std::string text = fitText(visibleToken(top->label), g.cell_w - 6);
  list->AddText(ImVec2(min.x + 3, min.y + 2), light ? IM_COL32(10, 10, 10, 255) : IM_COL32(240, 240, 240, 255), text.c_str());
  if (outlined) list->AddRect(min, max, ImGui::GetColorU32(kPinColor), 0.0f, 0, 2.0f);
  return text;
}

// The visible cells, then the frozen header row (tokens) and label column over them.
void drawGrid(AppState& state, const ViewModel& v, const LensGrid& g) {
  const LensTable& lens = v.lens;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const int64_t t0 = std::max<int64_t>(0, static_cast<int64_t>((g.clip_min.x - g.origin.x - g.label_w) / g.cell_w));
  const int64_t t1 = std::min(lens.positions, static_cast<int64_t>(std::ceil((g.clip_max.x - g.origin.x - g.label_w) / g.cell_w)));
  const int64_t l0 = std::max<int64_t>(0, static_cast<int64_t>((g.clip_min.y - g.origin.y) / g.cell_h) - 1);
  const int64_t l1 = std::min(lens.layers, static_cast<int64_t>(std::ceil((g.clip_max.y - g.origin.y) / g.cell_h)));
  state.feature<LensState>().visible_first = t0, state.feature<LensState>().visible_end = t1;  // the columns a lens on demand computes next
  list->PushClipRect(ImVec2(g.clip_min.x + g.label_w, g.clip_min.y + g.cell_h), g.clip_max, true);
  for (int64_t l = l0; l < l1; ++l)
    for (int64_t t = t0; t < t1; ++t) {
      const ImVec2 min = g.cellMin(l, t);
      const std::vector<TokenGuess>* cell = lensCell(state, l, t);
      const std::string text = drawCell(g, cell ? &cell->front() : nullptr, min, state.feature<LensState>().clicked == LensCell{l, t});
      if (min.x >= g.clip_min.x + g.label_w && min.x + g.cell_w <= g.clip_max.x &&
          min.y + g.cell_h <= g.clip_max.y + 1 && min.y >= g.clip_min.y + g.cell_h) {  // whole in view
        const std::string name = "lens_cell_" + std::to_string(l) + "_" + std::to_string(t);
        state.script.layout.record(name, min, ImVec2(g.cell_w - 1, g.cell_h - 1));
        state.script.layout.recordText(name, text);
      }
    }
  list->PopClipRect();
  const ImU32 header_bg = ImGui::GetColorU32(ImGuiCol_WindowBg), text = ImGui::GetColorU32(ImGuiCol_Text);
  list->PushClipRect(ImVec2(g.clip_min.x + g.label_w, g.clip_min.y), g.clip_max, true);
  list->AddRectFilled(g.clip_min, ImVec2(g.clip_max.x, g.clip_min.y + g.cell_h), header_bg);
  for (int64_t t = t0; t < t1; ++t) {
    const ImVec2 at(g.origin.x + g.label_w + t * g.cell_w + 3, g.clip_min.y + 2);
    list->AddText(at, ImGui::GetColorU32(ImGuiCol_TextDisabled), fitText(visibleToken(v.mapQueryTokens()[t]), g.cell_w - 6).c_str());
  }
  list->PopClipRect();
  list->PushClipRect(ImVec2(g.clip_min.x, g.clip_min.y + g.cell_h), g.clip_max, true);
  list->AddRectFilled(ImVec2(g.clip_min.x, g.clip_min.y + g.cell_h), ImVec2(g.clip_min.x + g.label_w, g.clip_max.y), header_bg);
  for (int64_t l = l0; l < l1; ++l) {
    const ImVec2 at(g.clip_min.x + 3, g.cellMin(l, 0).y + 2);
    list->AddText(at, text, rowName(l).c_str());
    if (at.y >= g.clip_min.y + g.cell_h && at.y + g.cell_h - 2 <= g.clip_max.y)
      state.script.layout.record("lens_row_" + std::to_string(l), ImVec2(g.clip_min.x, at.y - 2), ImVec2(g.label_w, g.cell_h - 1));
  }
  list->PopClipRect();
}

// The cell under the pointer (tooltip: its top 5) and a click on it.
void hoverAndClick(AppState& state, const ViewModel& v, const LensGrid& g) {
  LensCell cell;
  const ImVec2 m = ImGui::GetMousePos();
  if (ImGui::IsWindowHovered() && m.x >= g.clip_min.x + g.label_w && m.y >= g.clip_min.y + g.cell_h &&
      m.x < g.clip_max.x && m.y < g.clip_max.y) {
    const int64_t t = static_cast<int64_t>(std::floor((m.x - g.origin.x - g.label_w) / g.cell_w));
    const int64_t l = static_cast<int64_t>(std::floor((m.y - g.origin.y) / g.cell_h)) - 1;
    if (l >= 0 && l < v.lens.layers && t >= 0 && t < v.lens.positions) cell = {l, t};
  }
  if (cell != state.feature<LensState>().hovered) {
    state.feature<LensState>().hovered = cell;
    markStateChanged(state);
  }
  if (!cell.valid()) return;
  ImGui::BeginTooltip();
  ImGui::Text("%s at position %lld '%s'", cell.layer == 0 ? "embeddings" : ("after layer " + std::to_string(cell.layer)).c_str(),
              static_cast<long long>(cell.position), visibleToken(v.mapQueryTokens()[cell.position]).c_str());
  const std::vector<TokenGuess>* top = lensCell(state, cell.layer, cell.position);
  const float percent_x = ImGui::CalcTextSize("5. 'mmmmmmmm' ").x;
  for (size_t rank = 0; top && rank < top->size(); ++rank) {
    const std::string token = std::to_string(rank + 1) + ". '" + visibleToken((*top)[rank].label) + "'";
    const std::string percent = percentText((*top)[rank].prob);
    ImGui::TextUnformatted(token.c_str());
    ImGui::SameLine(percent_x);
    ImGui::TextUnformatted(percent.c_str());
    state.script.layout.recordText("lens_tooltip_" + std::to_string(rank), token + " " + percent);
  }
  if (!top) {
    const char* note = v.lens.later ? "computing this column..."
                                    : "not computed by the generation (its prompt's whole lens is past the budget)";
    ui::text(state.script.layout, "lens_tooltip_note", ui::disabledText(), "%s", note);
    state.script.layout.recordText("lens_tooltip_note", note);
  }
  ImGui::TextDisabled("click: focus layer %lld, query row %lld", static_cast<long long>(lensMapLayer(cell.layer)),
                      static_cast<long long>(cell.position));
  ImGui::EndTooltip();
  if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) focusLensCell(state, cell);
}

// The table in the tab, or over the focus view (cell_w: kLargeCellW) where it has room.
void drawLensTable(AppState& state, float cell_w) {
  const ViewModel& v = *state.compute.view;
  if (v.lens.empty()) {
    ui::text(state.script.layout, "lens_off", ui::wrappedText(), "%s",
             v.lens.off_reason.empty() ? "no logit lens for this result" : v.lens.off_reason.c_str());
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("top-1 token per layer (rows) and position; colour: its probability");
  if (v.lens.later) {  // past the whole lens's budget: the columns in view, a block at a time
    const std::string note = "long text: columns computed as they come into view (" +
                             std::to_string(state.feature<LensState>().columns.size()) + " of " + std::to_string(v.lens.positions) + ")";
    ui::text(state.script.layout, "lens_on_demand", ui::wrappedText(), "%s", note.c_str());
    state.script.layout.recordText("lens_on_demand", note);
  }
  if (!state.feature<LensState>().error.empty()) errorText(state.script.layout, "lens_error", state.feature<LensState>().error);
  ImGui::PopStyleColor();
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
  ImGui::BeginChild("##lens_table", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  LensGrid g;
  g.cell_w = cell_w;
  ImDrawList* list = ImGui::GetWindowDrawList();
  g.clip_min = list->GetClipRectMin();
  g.clip_max = list->GetClipRectMax();
  g.origin = ImGui::GetCursorScreenPos();
  g.cell_h = std::floor(ImGui::GetTextLineHeight() + 5.0f);
  g.label_w = ImGui::CalcTextSize(rowName(v.lens.layers - 1).c_str()).x + 12.0f;
  ImGui::Dummy(ImVec2(g.label_w + v.lens.positions * g.cell_w, g.cell_h * (v.lens.layers + 1)));
  // A generation with Follow on keeps its newest column, the token being chosen, in view.
  if (state.view.follow_newest) ImGui::SetScrollX(ImGui::GetScrollMaxX());
  state.script.layout.record("lens_table", g.clip_min, ImVec2(g.clip_max.x - g.clip_min.x, g.clip_max.y - g.clip_min.y));
  drawGrid(state, v, g);
  hoverAndClick(state, v, g);
  ImGui::EndChild();
  ImGui::PopStyleVar();
}

// A button that moves the table over the focus view (enlarged) or back into the tab.
void enlargeButton(AppState& state, const char* name, const char* label, bool enlarged) {
  if (!ui::smallButton(state.script.layout, name, label)) return;
  state.feature<LensState>().enlarged = enlarged;
  markStateChanged(state);
}

// The lens over the focus view: its window on the focus panel's rectangle, drawn on top of
// it while the tab is open and enlarged.
void drawLargeLens(AppState& state) {
  const PanelRect rect = panelRect(state, "focus");
  ImGui::SetNextWindowPos(rect.pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(rect.size, ImGuiCond_Always);
  if (ImGui::Begin("Logit lens###lens_large", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                                            ImGuiWindowFlags_NoCollapse)) {
    state.script.layout.recordWindow("lens_large");
    enlargeButton(state, "lens_shrink", "back to the focus view", false);
    drawLensTable(state, kLargeCellW);
  }
  ImGui::End();
}

}  // namespace

void drawLensTab(AppState& state) {
  const bool open = ui::beginTabItem(state.script.layout, "lens_tab", "Logit lens");
  if (open && state.feature<LensState>().enlarged) {
    ImGui::TextDisabled("the table is shown over the focus view");
    enlargeButton(state, "lens_shrink_tab", "show it here", false);
  } else if (open) {
    enlargeButton(state, "lens_enlarge", "enlarge (over the focus view)", true);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("the whole table in the focus view's space, wider cells; the button there brings the maps back");
    drawLensTable(state, kCellW);
  }
  if (open) ImGui::EndTabItem();
  if (open && state.feature<LensState>().enlarged && state.compute.view) drawLargeLens(state);
  if (open != state.feature<LensState>().shown) {
    state.feature<LensState>().shown = open;
    markStateChanged(state);
  }
}

}  // namespace attnscope
