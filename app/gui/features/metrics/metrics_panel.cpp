// The head metrics table beside the grid: one row per (layer, head) of the focused batch
// item with every metric of headMetricInfos() and the head's group (groups of heads whose
// maps correlate). Click a column header to sort (again to reverse), a row to focus that
// head; "order grid by table" lays the grid's tiles out in the table's order. The numbers
// come from the HeadTable the worker built with the view model; this panel only draws.
#include <imgui.h>
#include <imgui_internal.h>  // TableSetColumnSortDirection: a sort restored from view.json
#include <imgui_stdlib.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gui/features/metrics/metrics.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// Headings and tooltips of the table's columns (kHeadColumn, kGroupColumn, then metrics).
struct ColumnInfo {
  std::string heading, name, description;
};

std::vector<ColumnInfo> tableColumns() {
  std::vector<ColumnInfo> columns = {
      {"head", headColumnName(kHeadColumn), "layer and head (sorts in layer-major order)"},
      {"group", headColumnName(kGroupColumn), "group of heads whose maps correlate (Pearson r >= 0.5, average linkage)"}};
  for (const MetricInfo& info : headMetricInfos()) columns.push_back({info.heading, info.name, info.description});
  return columns;
}

// Sort state from a click on a header (ImGui keeps the direction toggling).
void readSortSpecs(AppState& state) {
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (!specs || !specs->SpecsDirty) return;
  specs->SpecsDirty = false;
  if (specs->SpecsCount < 1) return;
  const HeadSort sort{specs->Specs[0].ColumnIndex, specs->Specs[0].SortDirection == ImGuiSortDirection_Descending};
  if (sort == state.view.table.sort) return;
  state.view.table.sort = sort;
  saveLater(state);
  updateHeadOrder(state);  // this frame already draws (and logs) the new order
}

void groupMarker(int64_t group) {
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  const float side = ImGui::GetTextLineHeight() * 0.7f;
  const float y = pos.y + (ImGui::GetTextLineHeight() - side) / 2;
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(pos.x, y), ImVec2(pos.x + side, y + side), groupColor(group));
  ImGui::Dummy(ImVec2(side, ImGui::GetTextLineHeight()));
  ImGui::SameLine();
  ImGui::Text("%lld", static_cast<long long>(group));
}

// The filter box (words of a label or pattern, metric thresholds) and what it keeps.
void drawFilter(AppState& state) {
  HeadTableView& t = state.view.table;
  // The longest example that fits the box whole (a narrow panel at 1280 x 800 cut the first);
  // the box shares its line with the count while a useful example still fits, else the
  // count goes under it.
  static const std::vector<std::string> kHints = {"filter: L3  H5  induc  entropy>2  sink<0.1", "filter: L3  induc  entropy>2",
                                                  "filter: induc  entropy>2", "filter"};
  constexpr float kCountWidth = 150.0f;
  const float avail = ImGui::GetContentRegionAvail().x, padding = 2 * ImGui::GetStyle().FramePadding.x;
  const bool beside = ImGui::CalcTextSize(kHints[1].c_str()).x + padding <= avail - kCountWidth;
  const float box_w = beside ? avail - kCountWidth : avail;
  ImGui::SetNextItemWidth(box_w);
  const std::string& hint = kHints[firstFitting(kHints, box_w - padding)];
  state.script.layout.recordText("metrics_filter_hint", hint);
  if (ui::inputTextWithHint(state.script.layout, "metrics_filter", "##metrics_filter", hint.c_str(), &t.filter))
    updateHeadOrder(state);  // this frame already draws (and logs) the rows kept
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("rows that match every word: a label (L3, H5) or pattern (induc), or a metric threshold\n"
                      "METRIC>V, >=, <, <=: a column heading without spaces (entropy, maxp, distance, sink, diag, prev,\n"
                      "eff.keys, induction) or its JSON name (entropy_bits, sink_mass, ...)");
  if (beside) ImGui::SameLine();
  if (!t.filter_error.empty()) errorText(state.script.layout, "metrics_filter_count", t.filter_error);
  else ui::text(state.script.layout, "metrics_filter_count", ui::disabledText(), "%zu of %zu heads", t.visible.size(), t.order.size());
}

// Above the table: "order grid by table" (greyed when it orders nothing), the overview toggle
// and batch item b's group count.
void drawTableControls(AppState& state, const HeadTable& table, int64_t b) {
  HeadTableView& view = state.view.table;
  const std::string unused = orderGridUnusedReason(state);
  ImGui::BeginDisabled(!unused.empty());
  if (ui::checkbox(state.script.layout, "metrics_order_grid", "order grid by table", &view.order_grid)) saveLater(state);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", unused.empty() ? "lay out the head grid's tiles in this table's order" : unused.c_str());
  ImGui::SameLine();
  if (const ViewModel* shown = shownView(state)) drawOverviewToggle(state, *shown);
  const int64_t groups = table.clusters[b].count;
  const std::string about = "batch item " + std::to_string(b) + ", " + std::to_string(groups) + " group" +
                            (groups == 1 ? "" : "s");
  sameLineIfFits(ImGui::CalcTextSize(about.c_str()).x);  // else on a line of its own
  ui::text(state.script.layout, "metrics_groups", ui::disabledText(), "%s", about.c_str());
}

}  // namespace

float metricsWidth(const AppState& state, const ColumnSpace& space) {
  const float centre_w = space.width;
  return chosenSize(state.view.panel_sizes.table, centre_w, std::floor(std::clamp(centre_w * 0.42f, 280.0f, 520.0f)),
                    kMinColumn, centre_w - kMinColumn);
}

void drawMetricsPanel(AppState& state) {
  if (beginPanelWindow(state, "Head metrics", "metrics", ImGuiWindowFlags_NoScrollbar)) {
    const HeadTable* table = shownHeadTable(state);
    HeadTableView& view = state.view.table;
    if (!table || view.order.empty()) {
      const ViewModel* shown = shownView(state);
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      ImGui::TextWrapped("%s", !shown ? "no attention computed yet" : "measuring heads...");
      ImGui::PopStyleColor();
      ImGui::End();
      return;
    }
    const int64_t b = state.view.focus.batch_item;
    drawTableControls(state, *table, b);
    drawFilter(state);

    const std::vector<ColumnInfo> columns = tableColumns();
    const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                  ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_NoSavedSettings;  // the sort lives in view.json
    if (ImGui::BeginTable("metrics", static_cast<int>(columns.size()), flags)) {
      ImGui::TableSetupScrollFreeze(1, 1);
      for (size_t c = 0; c < columns.size(); ++c) {
        ImGuiTableColumnFlags column_flags = ImGuiTableColumnFlags_None;
        if (c == kHeadColumn) column_flags |= ImGuiTableColumnFlags_DefaultSort;
        // Metrics sort largest first on the first click: the heads that stand out.
        if (static_cast<int>(c) >= kFirstMetricColumn) column_flags |= ImGuiTableColumnFlags_PreferSortDescending;
        ImGui::TableSetupColumn(columns[c].heading.c_str(), column_flags);
      }
      if (view.sort_to_table) {  // restored from view.json: the table shows it sorted so
        ImGui::TableSetColumnSortDirection(view.sort.column, view.sort.descending ? ImGuiSortDirection_Descending
                                                                                   : ImGuiSortDirection_Ascending, false);
        view.sort_to_table = false;
      }
      readSortSpecs(state);
      ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
      for (size_t c = 0; c < columns.size(); ++c) {
        ImGui::TableSetColumnIndex(static_cast<int>(c));
        ui::tableHeader(state.script.layout, "metrics_header_" + columns[c].name, columns[c].heading.c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\nclick to sort, again to reverse", columns[c].description.c_str());
      }
      const ViewFocus focus = state.view.focus;
      const auto& infos = headMetricInfos();
      beginHeadRows(state.head_scroll.table);
      for (size_t k = 0; k < view.visible.size(); ++k) {
        const int64_t n = view.visible[k], layer = n / table->H, head = n % table->H;
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(kHeadColumn);
        const bool focused = layer == focus.layer && head == focus.head;
        const std::string label = headLabel(*table, n) + "##row" + std::to_string(n);
        if (ui::selectable(state.script.layout, "metrics_row_" + std::to_string(k), label.c_str(), focused,
                           ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap) &&
            !focused) {
          setFocus(state, ViewFocus{layer, head, focus.batch_item});
        }
        headRowDrawn(state, state.head_scroll.table, layer, head, table->H, ImGui::TableGetHeaderRowHeight());
        ImGui::TableSetColumnIndex(kGroupColumn);
        groupMarker(table->group(n, b));
        // A model run's ablate toggle after the group (beside the label, the row's selectable
        // spanning every column would put it past the last one).
        if (const ViewModel* run = state.compute.view.get(); run && run->source == ViewSource::ModelRun) {
          ImGui::SameLine();
          drawAblateToggle(state, *run, "metrics_ablate_" + std::to_string(k), layer, head);
        }
        const HeadMetrics& m = table->row(layer, head, b);
        for (size_t metric = 0; metric < infos.size(); ++metric) {
          ImGui::TableSetColumnIndex(kFirstMetricColumn + static_cast<int>(metric));
          const double value = m.*infos[metric].field;
          if (std::isnan(value)) ImGui::TextDisabled("-");
          else ImGui::Text("%.3f", value);
        }
      }
      endHeadRows(state, state.head_scroll.table);
      ImGui::EndTable();
    }
  }
  ImGui::End();
}

}  // namespace attnscope
