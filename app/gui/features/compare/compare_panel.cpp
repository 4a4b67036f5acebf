// The compare view (the focus panel's "Compare" tab): any two probability maps A and B of
// the focused batch item (layer, head, and with a teaching mistake: this run or the correct
// run; B also the same settings with another mistake, e.g. no scaling) side by side on one colour scale, then A - B on the diverging map with a symmetric
// range, and the cells that differ most. The numbers come from CompareState (compareMaps,
// recomputed when the picks change); this panel only draws and edits the picks.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui/features/compare/compare.h"
#include "view/colormap.h"
#include "gui/render/heatmap_widget.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// One combo; items are recorded as <id>_item_<k> while its popup is open (tests click them).
bool pickCombo(AppState& state, const std::string& id, const std::vector<std::string>& items, int64_t& value,
               float width) {
  bool changed = false;
  ImGui::SetNextItemWidth(width);
  const std::string preview = items[static_cast<size_t>(std::clamp<int64_t>(value, 0, items.size() - 1))];
  WidgetRects& rects = state.script.layout;
  if (ui::Combo combo(rects, id, ("##" + id).c_str(), preview.c_str()); combo) {
    for (size_t k = 0; k < items.size(); ++k) {
      if (ui::selectable(rects, id + "_item_" + std::to_string(k), items[k].c_str(), static_cast<int64_t>(k) == value) &&
          static_cast<int64_t>(k) != value) {
        value = static_cast<int64_t>(k);
        changed = true;
      }
    }
  }
  return changed;
}

// The runs a pick can read: this run, the mistakes lab's correct run (with a mistake), and
// for B the same settings with any other mistake ("with no-scaling": a second run).
struct RunChoice {
  std::string label;
  bool correct_run;
  Mistake with;
  bool other_file = false;
};
std::vector<RunChoice> runChoices(const AppState& state, bool has_correct, bool variants, bool other_file) {
  std::vector<RunChoice> runs = {{"this run", false, Mistake::None}};
  if (has_correct) runs.push_back({"correct run", true, Mistake::None});
  if (variants)
    for (Mistake m : allMistakes())
      if (m != Mistake::None && m != state.settings.mistake) runs.push_back({std::string("with ") + mistakeName(m), false, m});
  if (other_file) runs.push_back({"other file", false, Mistake::None, true});
  return runs;
}

// "A: [run] [layer] [head]" on one line.
bool drawPickControls(AppState& state, const char* name, MapPick& pick, const ViewModel& view, bool has_correct) {
  bool changed = false;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(name);
  const std::string prefix = std::string("compare_") + (name[0] == 'A' ? "a" : "b");
  const bool b = name[0] == 'B';
  const std::vector<RunChoice> runs = runChoices(state, has_correct, b && settingsVariantsPossible(state),
                                                 b && otherFilePossible(state) && !state.feature<CompareState>().other.path.empty());
  if (runs.size() > 1) {
    std::vector<std::string> labels;
    int64_t run = 0;
    for (size_t k = 0; k < runs.size(); ++k) {
      labels.push_back(runs[k].label);
      if (runs[k].correct_run == pick.correct_run && runs[k].with == pick.with && runs[k].other_file == pick.other_file)
        run = static_cast<int64_t>(k);
    }
    ImGui::SameLine();
    if (pickCombo(state, prefix + "_run", labels, run, runs.size() > 2 ? 150 : 110)) {
      pick.correct_run = runs[static_cast<size_t>(run)].correct_run;
      pick.with = runs[static_cast<size_t>(run)].with;
      pick.other_file = runs[static_cast<size_t>(run)].other_file;
      changed = true;
    }
    if (ImGui::IsItemHovered() && name[0] == 'B')
      ImGui::SetTooltip("B from this run, or the same settings with a mistake from the mistakes lab (a second run)");
  }
  if (view.layers > 1) {
    std::vector<std::string> layers;
    for (const LayerMaps& layer : view.maps) layers.push_back(layer.name);
    ImGui::SameLine();
    changed |= pickCombo(state, prefix + "_layer", layers, pick.layer, 110);
  }
  std::vector<std::string> heads;
  for (int64_t h = 0; h < view.H; ++h) heads.push_back("head " + std::to_string(h));
  ImGui::SameLine();
  changed |= pickCombo(state, prefix + "_head", heads, pick.head, 90);
  return changed;
}


void drawCellTooltip(const AppState& state, const ViewModel& view, int64_t b, int64_t i, int64_t j) {
  const CompareState& c = state.feature<CompareState>();
  const ViewModel* va = pickedView(state, c.a);
  const ViewModel* vb = pickedView(state, c.b);
  ImGui::BeginTooltip();
  ImGui::Text("query  %s  (i = %lld)", visibleToken(view.query_tokens[b][i]).c_str(), static_cast<long long>(i));
  ImGui::Text("key    %s  (j = %lld)", visibleToken(view.key_tokens[b][j]).c_str(), static_cast<long long>(j));
  ImGui::Separator();
  ImGui::Text("A      %.6g", va->probs(c.a.layer, b, c.a.head)[i * view.S + j]);
  ImGui::Text("B      %.6g", vb->probs(c.b.layer, b, c.b.head)[i * view.S + j]);
  ImGui::Text("A - B  %+.6g", c.comparison.difference.data[i * view.S + j]);
  ImGui::EndTooltip();
}

// The cells that differ most: cell, tokens, A, B, A - B.
void drawLargestDifferences(AppState& state, const ViewModel& view, int64_t b, float height) {
  const MapComparison& comparison = state.feature<CompareState>().comparison;
  if (comparison.largest.empty()) {
    ImGui::TextDisabled("A and B are equal in every cell (max |A - B| = 0)");
    return;
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("largest", 6, flags, ImVec2(0, std::max(height, 3 * ImGui::GetFrameHeight())))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* heading : {"cell (i, j)", "query", "key", "A", "B", "A - B"}) ImGui::TableSetupColumn(heading);
  ImGui::TableHeadersRow();
  for (const MapCell& cell : comparison.largest) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("(%lld, %lld)", static_cast<long long>(cell.row), static_cast<long long>(cell.col));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(visibleToken(view.query_tokens[b][cell.row]).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(visibleToken(view.key_tokens[b][cell.col]).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.4f", cell.a);
    ImGui::TableNextColumn();
    ImGui::Text("%.4f", cell.b);
    ImGui::TableNextColumn();
    ImGui::Text("%+.4f", cell.diff);
  }
  ui::endTable(state.script.layout, "compare_largest");
}

// One of the three maps: A, B or A - B.
struct ComparedMap {
  std::string title;
  const char* layout;
  unsigned int texture;
  Colormap colormap;
  ValueRange range;
  bool row_labels, color_bar;
  const char* bar_format;
};

// Sizes shared by the three maps.
struct CompareGeometry {
  float line_h = 0, row_label_w = 0, col_label_h = 0, bar_w = 58.0f, gap = 12.0f, map_w = 0, map_h = 0;
};

ColorBarView colorBarOf(const ComparedMap& shown) {
  return {shown.colormap, shown.range, false, shown.bar_format, std::string(shown.layout) + "_colorbar"};
}

CompareGeometry compareGeometry(AppState& state, const ViewModel& view, int64_t b, const std::vector<ComparedMap>& maps) {
  CompareGeometry g;
  g.line_h = ImGui::GetTextLineHeightWithSpacing();
  for (const ComparedMap& shown : maps)  // room for the widest tick labels, 12 px from the map
    if (shown.color_bar) g.bar_w = std::max(g.bar_w, 12.0f + colorBarWidth(colorBarOf(shown)));
  const LabelWidths& widths = tokenLabelWidths(state.ui.label_widths, view, b);
  g.row_label_w = widths.query + 8.0f, g.col_label_h = widths.key + 8.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float list_h = 7 * ImGui::GetFrameHeight();  // header + 6 rows, the rest scrolls
  const float aspect = static_cast<float>(view.S) / static_cast<float>(view.L);
  const float max_w = (avail.x - g.row_label_w - 2 * g.bar_w - 2 * g.gap) / 3.0f;
  const float max_h = avail.y - g.line_h * 2.5f - g.col_label_h - list_h;
  const float map_h = std::min(max_h, max_w / aspect);
  g.map_w = std::max(16.0f, std::floor(map_h * aspect));
  g.map_h = std::max(16.0f, std::floor(map_h));
  return g;
}

// A and B on one probability scale; A - B symmetric around 0 (white).
std::vector<ComparedMap> comparedMaps(const AppState& state, const ViewModel& view, unsigned int tex_a,
                                      unsigned int tex_b) {
  const CompareState& c = state.feature<CompareState>();
  const int64_t b = c.batch_item;
  const MapRange& ra = pickedView(state, c.a)->probsRange(c.a.layer, b, c.a.head);
  const MapRange& rb = pickedView(state, c.b)->probsRange(c.b.layer, b, c.b.head);
  const ValueRange probs_range{0.0f, std::max({ra.max, rb.max, 1e-6f})};
  const float abs_max = c.comparison.abs_max > 0 ? c.comparison.abs_max : 1.0f;
  const ValueRange diff_range{-abs_max, abs_max};
  const Colormap probs_map = state.settings.prob_colormap;
  return {
      {"A: " + pickName(view, c.a), "compare_a", tex_a, probs_map, probs_range, true, false, "%.3g"},
      {"B: " + pickName(view, c.b), "compare_b", tex_b, probs_map, probs_range, false, true, "%.3g"},
      {"A - B", "compare_diff", state.gpu.compare_diff, Colormap::Diverging, diff_range, false, true, "%+.3g"},
  };
}

// Draws one map with its title at (x, y); returns the width it took.
float drawComparedMap(AppState& state, const ViewModel& view, const ComparedMap& shown, const CompareGeometry& g,
                      float x, float y) {
  const int64_t b = state.feature<CompareState>().batch_item;
  const float label_w = shown.row_labels ? g.row_label_w : 0.0f;
  ImGui::SetCursorScreenPos(ImVec2(x + label_w, y));
  // The title fits over the map and its colour bar, shorter without the run's note when it
  // must: never into the next map's title.
  const float title_w = g.map_w + (shown.color_bar ? g.bar_w : 0.0f);
  const std::vector<std::string> forms{shown.title, shown.title.substr(0, shown.title.find(" ("))};
  ui::textUnformatted(state.script.layout, std::string(shown.layout) + "_title",
                      fitText(forms[firstFitting(forms, title_w)], title_w));
  const ImVec2 map_min(x + label_w, y + g.line_h);
  ImGui::SetCursorScreenPos(map_min);
  HeatmapView heatmap;
  heatmap.texture = shown.texture;
  heatmap.rows = view.L;
  heatmap.cols = view.S;
  heatmap.colormap = shown.colormap;
  heatmap.range = shown.range;
  heatmap.name = shown.layout;
  showResultState(state, heatmap);
  const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), heatmap, ImVec2(g.map_w, g.map_h));
  const ImVec2 map_max(map_min.x + g.map_w, map_min.y + g.map_h);
  const LabelSpan rows{shown.row_labels ? &view.query_tokens[b] : nullptr, 0, view.L};
  drawAxisLabels(rows, LabelSpan{&view.key_tokens[b], 0, view.S}, map_min, map_max);
  if (hit.hovered) {
    state.view.hover_next = {hit.row, hit.col};
    drawCellTooltip(state, view, b, hit.row, hit.col);
  }
  if (shown.color_bar) {
    ImGui::SetCursorScreenPos(ImVec2(map_max.x + 12, map_min.y));
    drawColorBar(heatmapCanvas(state), colorBarOf(shown),
                 ImVec2(g.bar_w - 12, g.map_h));
  }
  return label_w + g.map_w + (shown.color_bar ? g.bar_w : 0.0f) + g.gap;
}

// The picks of A and B and the swap button; a change is saved with the view state.
void drawCompareControls(AppState& state, const ViewModel& view) {
  CompareView& picks = state.view.compare;
  const bool has_correct = pickedView(state, MapPick{0, 0, true, Mistake::None}) != nullptr;
  bool changed = drawPickControls(state, "A", picks.a, view, has_correct);
  ImGui::SameLine(0, 24);
  changed |= drawPickControls(state, "B", picks.b, view, has_correct);
  ImGui::SameLine(0, 16);
  if (ui::button(state.script.layout, "compare_swap", "swap")) std::swap(picks.a, picks.b), changed = true;
  if (changed) {
    picks.chosen = true;
    saveLater(state);
  }
}

// "another file of this model: [path] [compare]": B becomes the focused head on that file.
void drawOtherFileControls(AppState& state) {
  OtherFile& other = state.feature<CompareState>().other;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("another file of this model:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(120.0f, ImGui::GetContentRegionAvail().x - 90.0f));
  const bool entered = ui::inputTextWithHint(state.script.layout, "compare_other_path", "##compare_other_path",
                                             "/path/to/model-q4_k_m.gguf, hf:ORG/NAME, ollama:NAME", &other.input,
                                             ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ui::button(state.script.layout, "compare_other_use", "compare") || entered) && !other.input.empty())
    compareWithOtherFile(state, other.input);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("B: the same text on another file of this model (e.g. F16 vs Q4_K_M): the overview shows every "
                      "head's drift");
}

// Every head's drift against the other file, layers x heads, coloured by max |A - B| or the mean
// Jensen-Shannon divergence per row; a click compares that head.
void drawDriftOverview(AppState& state) {
  OtherFile& other = state.feature<CompareState>().other;
  const Tensor& drift = other.show_js ? other.js : other.max_abs;
  if (drift.empty()) return;
  ImGui::TextUnformatted("drift per head:");
  ImGui::SameLine();
  if (ui::radioButton(state.script.layout, "compare_drift_max_abs", "max |A - B|", !other.show_js)) other.show_js = false, markStateChanged(state);
  ImGui::SameLine();
  if (ui::radioButton(state.script.layout, "compare_drift_js", "Jensen-Shannon", other.show_js)) other.show_js = true, markStateChanged(state);
  const float high = std::max(1e-12f, *std::max_element(drift.data.begin(), drift.data.end()));
  ImGui::SameLine();
  ImGui::Text("(0 .. %.3g)", static_cast<double>(high));
  const int64_t N = drift.dim(0), H = drift.dim(1);
  const float cell = std::clamp(std::min(ImGui::GetContentRegionAvail().x / float(H), 60.0f / float(N)), 4.0f, 18.0f);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int64_t l = 0; l < N; ++l)
    for (int64_t h = 0; h < H; ++h) {
      const Rgb rgb = colormapColor(state.settings.prob_colormap, drift.data[l * H + h], 0.0f, high);
      const ImVec2 lo(origin.x + float(h) * cell, origin.y + float(l) * cell);
      draw->AddRectFilled(lo, ImVec2(lo.x + cell - 1, lo.y + cell - 1), IM_COL32(rgb[0], rgb[1], rgb[2], 255));
    }
  ImGui::SetCursorScreenPos(origin);
  ui::invisibleButton(state.script.layout, "compare_drift", "##compare_drift", ImVec2(cell * float(H), cell * float(N)));
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int64_t l = std::clamp<int64_t>(int64_t((mouse.y - origin.y) / cell), 0, N - 1);
    const int64_t h = std::clamp<int64_t>(int64_t((mouse.x - origin.x) / cell), 0, H - 1);
    ImGui::SetTooltip("layer %lld, head %lld: max |A - B| %.4g, Jensen-Shannon %.4g", static_cast<long long>(l),
                      static_cast<long long>(h), static_cast<double>(other.max_abs.data[l * H + h]),
                      static_cast<double>(other.js.data[l * H + h]));
    if (ImGui::IsItemClicked()) {
      state.view.compare.a = {l, h};
      state.view.compare.b = {l, h, false, Mistake::None, true};
      saveLater(state);
    }
  }
}

// Under the maps: the export button, the largest difference and the list of cells.
void drawCompareFooter(AppState& state, const ViewModel& view) {
  const CompareState& c = state.feature<CompareState>();
  if (ui::smallButton(state.script.layout, "compare_export", "Export A - B")) requestDifferenceExport(state);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("write A - B as PNG and .npy [L, S], with a JSON naming A and B");
  ImGui::SameLine();
  if (!c.comparison.largest.empty()) {
    const MapCell& top = c.comparison.largest.front();
    ImGui::Text("max |A - B| = %.4g at (%lld, %lld)   colour range +-%.3g; largest differences:",
                static_cast<double>(c.comparison.abs_max), static_cast<long long>(top.row),
                static_cast<long long>(top.col), static_cast<double>(c.comparison.abs_max));
  }
  drawLargestDifferences(state, view, c.batch_item, ImGui::GetContentRegionAvail().y - 4);
}

}  // namespace

void drawComparePanel(AppState& state) {
  const ViewModel* view = shownView(state);
  if (!view) {
    ImGui::TextDisabled("no attention computed yet");
    return;
  }
  drawCompareControls(state, *view);
  if (otherFilePossible(state)) drawOtherFileControls(state);
  if (state.view.compare.b.other_file) drawDriftOverview(state);
  const CompareState& c = state.feature<CompareState>();
  if (!c.error.empty()) {
    errorText(c.error);
    return;
  }
  const unsigned int tex_a = pickedTexture(state, c.a), tex_b = pickedTexture(state, c.b);
  if (c.generation == 0 || !tex_a || !tex_b || !state.gpu.compare_diff) {
    ImGui::TextDisabled("comparing...");
    return;
  }
  const std::vector<ComparedMap> maps = comparedMaps(state, *view, tex_a, tex_b);
  const CompareGeometry g = compareGeometry(state, *view, c.batch_item, maps);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  float x = origin.x;
  for (const ComparedMap& shown : maps)
    x += drawComparedMap(state, *view, shown, g, x, origin.y);
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + g.line_h + g.map_h + g.col_label_h + 4));
  drawCompareFooter(state, *view);
}

}  // namespace attnscope
