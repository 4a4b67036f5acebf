// Drawing the layers x heads overview: a header line (metric picker, the toggle back to
// tiles, the value range), column numbers on top, layer names on the left, one filled
// rectangle per head (ImGui draw list: 1024 rectangles are cheap) and a colour bar. The
// grid is one invisible button: the pointer's cell is read off its position.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gui/features/head_grid/overview.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

constexpr float kBarWidth = 70.0f;    // colour bar and its tick labels
constexpr const char* kSweepHeading = "sweep effect";
constexpr float kMaxCell = 64.0f;     // a few heads: cells no larger than this
constexpr float kPreviewSide = 180.0f;  // the hover preview's longer side
const ImU32 kFocusOutline = IM_COL32(255, 204, 51, 255);

// The colour map of the overview's values: the probabilities' one, diverging for the sweep's
// signed changes.
Colormap overviewColormap(const AppState& state) {
  return state.feature<OverviewState>().metric == kSweepMetric ? Colormap::Diverging : state.settings.prob_colormap;
}

ImU32 cellColor(const AppState& state, double value, double low, double high) {
  const Rgb rgb = std::isnan(value) ? kMaskedColor
                                    : colormapColor(overviewColormap(state), static_cast<float>(value),
                                                    static_cast<float>(low), static_cast<float>(high));
  return IM_COL32(rgb[0], rgb[1], rgb[2], 255);
}

// The values' range and the one the colours span (the metric's fixed range, or auto), with
// a warning when an auto range is narrow.
void drawRange(AppState& state, const ViewModel& view) {
  const OverviewState& o = state.feature<OverviewState>();
  char range[160] = "measuring heads...";
  const OverviewScale& scale = o.data.scale;
  if (!o.data.values.empty())
    std::snprintf(range, sizeof range, "%lld heads %.3g .. %.3g, colours %.3g .. %.3g (%s)",
                  static_cast<long long>(view.layers * view.H), o.data.low, o.data.high, scale.low, scale.high,
                  scale.automatic ? "auto" : scale.rule.c_str());
  sameLineIfFits(ImGui::CalcTextSize(range).x);  // else on a line of its own: never cut at the panel's edge
  ui::text(state.script.layout, "overview_range", ui::disabledText(), "%s", range);
  state.script.layout.recordText("overview_range", range);
  if (!scale.warning.empty()) warningText(state.script.layout, "overview_range_warning", scale.warning);
}

// The ablation sweep: start it (zero or mean) or, while it runs, its progress and Cancel;
// what the last one gave, or why it failed.
void drawSweepControls(AppState& state) {
  SweepState& sweep = state.feature<OverviewState>().sweep;
  if (sweep.running) {
    if (ui::smallButton(state.script.layout, "sweep_cancel", "cancel sweep")) cancelAblationSweep(state);
    ImGui::SameLine();
    char label[48];
    std::snprintf(label, sizeof label, "ablation sweep %.0f%%", 100.0 * sweep.progress);
    ImGui::ProgressBar(static_cast<float>(sweep.progress), ImVec2(-1, 0), label);
    state.script.layout.recordItem("sweep_progress");
    return;
  }
  if (ui::smallButton(state.script.layout, "sweep_start", "ablation sweep")) startAblationSweep(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("ablate each head alone and colour it by the change in log p of the top prediction\n"
                      "at the pinned query (else the last position); runs in the background");
  ImGui::SameLine();
  ui::checkbox(state.script.layout, "sweep_mean", "mean", &sweep.mean);
  const SweepResult* r = sweep.result.get();
  if (r && !r->error.empty()) errorText(state.script.layout, "sweep_error", r->error);
  else if (r && r->cancelled) ui::text(state.script.layout, "sweep_note", ui::disabledText(), "sweep cancelled");
  else if (r) {
    ui::text(state.script.layout, "sweep_note", ui::disabledText(), "swept at position %lld (%s)",
             static_cast<long long>(r->sweep->position), r->mode == AblationMode::Mean ? "mean" : "zero");
  }
}

// The metric picker, the toggle and the auto range, with the range the colours span.
void drawHeader(AppState& state, const ViewModel& view) {
  OverviewState& o = state.feature<OverviewState>();
  const MetricInfo* current = findHeadMetric(o.metric);
  ImGui::TextUnformatted("colour by");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  if (ui::Combo combo(state.script.layout, "overview_metric", "##overview_metric",
                      current ? current->heading : kSweepHeading);
      combo) {
    if (o.sweep.result && o.sweep.result->sweep &&
        ui::selectable(state.script.layout, std::string("overview_metric_") + kSweepMetric, kSweepHeading, !current)) {
      o.metric = kSweepMetric;
      updateOverview(state);
    }
    for (const MetricInfo& info : headMetricInfos()) {
      if (ui::selectable(state.script.layout, std::string("overview_metric_") + info.name, info.heading, current == &info)) {
        o.metric = info.name;
        updateOverview(state);  // this frame already draws (and logs) the new colours
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", info.description);
    }
  }
  ImGui::SameLine();
  drawOverviewToggle(state, view);
  constexpr const char* kAutoLabel = "auto range";
  sameLineIfFits(ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(kAutoLabel).x);
  if (ui::checkbox(state.script.layout, "overview_auto_range", kAutoLabel, &o.auto_range)) updateOverview(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("off: the colours span the metric's own range (%s), so a colour means one value\n"
                      "on: they span the values shown, which makes small differences look large",
                      current ? current->range_rule : "");
  drawRange(state, view);
  if (view.source == ViewSource::ModelRun) drawSweepControls(state);
}

struct CellGrid {
  ImVec2 origin;        // top-left of cell (0, 0)
  float w = 0, h = 0, gap = 0;
  int64_t rows = 0, cols = 0;
  ImVec2 cellMin(int64_t l, int64_t h_) const { return ImVec2(origin.x + h_ * (w + gap), origin.y + l * (h + gap)); }
  ImVec2 size() const { return ImVec2(cols * (w + gap) - gap, rows * (h + gap) - gap); }
};

// The largest cells (at most kMaxCell, square when both sides allow) that fit `avail`.
CellGrid fitCells(ImVec2 avail, int64_t rows, int64_t cols) {
  CellGrid g;
  g.rows = rows, g.cols = cols;
  const float raw_w = avail.x / static_cast<float>(cols), raw_h = avail.y / static_cast<float>(rows);
  g.gap = std::min(raw_w, raw_h) >= 8.0f ? 1.0f : 0.0f;
  g.w = std::max(1.0f, std::floor(std::min(raw_w - g.gap, kMaxCell)));
  g.h = std::max(1.0f, std::floor(std::min(raw_h - g.gap, kMaxCell)));
  const float side = std::min(g.w, g.h);
  g.w = std::min(g.w, side * 2), g.h = std::min(g.h, side * 2);  // never stretched past 2:1
  return g;
}

// Head numbers over the columns, every k-th when cells are narrower than the numbers.
void drawColumnLabels(const CellGrid& g, float y, int64_t focused_head) {
  const float label_w = ImGui::CalcTextSize("000").x + 4;
  const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(label_w / (g.w + g.gap))));
  ImDrawList* list = ImGui::GetWindowDrawList();
  for (int64_t h = 0; h < g.cols; h += every) {
    const std::string text = std::to_string(h);
    const ImU32 color = h == focused_head ? kFocusOutline : ImGui::GetColorU32(ImGuiCol_TextDisabled);
    list->AddText(ImVec2(g.cellMin(0, h).x, y), color, text.c_str());
  }
}

// Layer names left of the rows (right-aligned), every k-th when rows are lower than a line.
void drawRowLabels(const ViewModel& view, const CellGrid& g, float right, float width, int64_t focused_layer) {
  const float line = ImGui::GetTextLineHeight();
  const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(line / (g.h + g.gap))));
  ImDrawList* list = ImGui::GetWindowDrawList();
  for (int64_t l = 0; l < g.rows; l += every) {
    const std::string name = fitText(view.maps[static_cast<size_t>(l)].name, width - 6);
    const float x = right - 6 - ImGui::CalcTextSize(name.c_str()).x;
    const float y = g.cellMin(l, 0).y + (g.h - line) / 2;
    list->AddText(ImVec2(x, y), l == focused_layer ? kFocusOutline : ImGui::GetColorU32(ImGuiCol_Text), name.c_str());
  }
}

// The hovered head's map, small, in the tooltip (its texture, as the tiles draw it).
void drawPreview(AppState& state, const ViewModel& view, int64_t layer, int64_t head, double value) {
  const ViewTextures& tex = state.gpu.textures;
  const MetricInfo* metric = findHeadMetric(state.feature<OverviewState>().metric);
  const char* heading = metric ? metric->heading : kSweepHeading;
  ImGui::BeginTooltip();
  ImGui::Text("%s, head %lld", view.maps[static_cast<size_t>(layer)].name.c_str(), static_cast<long long>(head));
  if (std::isnan(value)) ImGui::TextDisabled("%s: -", heading);
  else ImGui::Text("%s: %.3f", heading, value);
  const size_t index = tex.index(layer, head);
  if (index < tex.probs.size()) {
    HeatmapView map;
    map.texture = tex.probs[index];
    map.rows = view.L;
    map.cols = view.S;
    map.colormap = state.settings.prob_colormap;
    map.range = ValueRange{state.settings.log_scale ? tex.prob_min_positive : 0.0f, tex.prob_max};
    map.log_scale = state.settings.log_scale;
    map.name = "overview_preview";
    const float aspect = static_cast<float>(view.S) / static_cast<float>(std::max<int64_t>(1, view.L));
    const ImVec2 size = aspect >= 1 ? ImVec2(kPreviewSide, kPreviewSide / aspect) : ImVec2(kPreviewSide * aspect, kPreviewSide);
    drawHeatmap(heatmapCanvas(state), map, ImVec2(std::max(size.x, 16.0f), std::max(size.y, 16.0f)));
  }
  ImGui::TextDisabled("click to focus");
  ImGui::EndTooltip();
}

void drawCells(AppState& state, const CellGrid& g) {
  const OverviewState& o = state.feature<OverviewState>();
  const bool measured = o.data.layers == g.rows && o.data.H == g.cols;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ViewFocus& focus = state.view.focus;
  for (int64_t l = 0; l < g.rows; ++l)
    for (int64_t h = 0; h < g.cols; ++h) {
      const ImVec2 min = g.cellMin(l, h);
      const double v = measured ? o.data.at(l, h) : NAN;
      list->AddRectFilled(min, ImVec2(min.x + g.w, min.y + g.h), cellColor(state, v, o.data.scale.low, o.data.scale.high));
    }
  const ImVec2 f = g.cellMin(focus.layer, focus.head);
  list->AddRect(ImVec2(f.x - 1, f.y - 1), ImVec2(f.x + g.w + 1, f.y + g.h + 1), kFocusOutline, 0.0f, 0, 2.0f);
}

// Hover and click on the grid (one invisible button over every cell).
void handlePointer(AppState& state, const ViewModel& view, const CellGrid& g) {
  OverviewState& o = state.feature<OverviewState>();
  ImGui::SetCursorScreenPos(g.origin);
  ui::invisibleButton(state.script.layout, "overview_grid", "##overview_grid", g.size());
  int64_t hovered = -1;
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int64_t h = std::min(g.cols - 1, static_cast<int64_t>((mouse.x - g.origin.x) / (g.w + g.gap)));
    const int64_t l = std::min(g.rows - 1, static_cast<int64_t>((mouse.y - g.origin.y) / (g.h + g.gap)));
    hovered = l * g.cols + h;
    const bool clicked = ImGui::IsItemClicked();  // before the tooltip's items
    const bool measured = o.data.layers == g.rows && o.data.H == g.cols;
    drawPreview(state, view, l, h, measured ? o.data.at(l, h) : NAN);
    if (clicked) setFocus(state, ViewFocus{l, h, state.view.focus.batch_item});
  }
  if (hovered != o.hovered) {
    o.hovered = hovered;
    markStateChanged(state);
  }
}

}  // namespace

void drawOverview(AppState& state, const ViewModel& view) {
  state.script.layout.recordWindow("overview_panel");
  if (ImGui::GetScrollY() != 0.0f) ImGui::SetScrollY(0.0f);  // the tiles' scroll position: the overview fits
  drawHeader(state, view);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  float name_w = 0.0f;
  for (const LayerMaps& layer : view.maps) name_w = std::max(name_w, ImGui::CalcTextSize(layer.name.c_str()).x);
  const float row_label_w = std::min(name_w, 120.0f) + 8.0f;
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  CellGrid g = fitCells(ImVec2(avail.x - row_label_w - kBarWidth, avail.y - line - 4), view.layers, view.H);
  const float spare = std::max(0.0f, avail.x - row_label_w - kBarWidth - g.size().x);
  g.origin = ImVec2(top.x + std::floor(spare / 2) + row_label_w, top.y + line);
  state.view.grid_columns = static_cast<int>(view.H);  // one row of cells per layer
  OverviewState& o = state.feature<OverviewState>();
  if (g.w != o.cell_w || g.h != o.cell_h || g.gap != o.gap) {
    o.cell_w = g.w, o.cell_h = g.h, o.gap = g.gap;
    markStateChanged(state);
  }
  drawColumnLabels(g, top.y, state.view.focus.head);
  drawRowLabels(view, g, g.origin.x, row_label_w, state.view.focus.layer);
  drawCells(state, g);
  handlePointer(state, view, g);
  ImGui::SetCursorScreenPos(ImVec2(g.origin.x + g.size().x + 8, g.origin.y));
  const OverviewScale& scale = o.data.scale;
  const ValueRange range{static_cast<float>(scale.low), static_cast<float>(std::max(scale.high, scale.low + 1e-9))};
  drawColorBar(heatmapCanvas(state), {overviewColormap(state), range, false, "%.3g", "overview_colorbar"},
               ImVec2(kBarWidth - 8, std::max(40.0f, std::min(g.size().y, 480.0f))));
}

}  // namespace attnscope
