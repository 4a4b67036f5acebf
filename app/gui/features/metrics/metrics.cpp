#include "gui/features/metrics/metrics.h"

#include "analysis/head_filter.h"
#include "gui/shell/app_state.h"

namespace attnscope {

std::string headLabel(const HeadTable& table, int64_t n) {
  const int64_t layer = n / table.H, head = n % table.H;
  return table.layers > 1 ? "L" + std::to_string(layer) + " H" + std::to_string(head) : "head " + std::to_string(head);
}

namespace {

// What the filter's words match in row n: its label and the patterns training.json names.
std::string rowText(const HeadTable& table, const ViewModel* view, int64_t n) {
  std::string text = headLabel(table, n);
  if (view)
    for (const HeadNote& note : view->notable_heads)
      if (note.layer * table.H + note.head == n) text += " " + note.pattern;
  return text;
}

// The rows of t.order that the filter keeps.
void filterRows(AppState& state, const HeadTable* table) {
  HeadTableView& t = state.view.table;
  const HeadFilter filter = parseHeadFilter(t.filter);
  t.filter_error = filter.error;
  t.visible.clear();
  const int64_t b = state.view.focus.batch_item;
  for (int64_t n : t.order)
    if (filter.empty() || filter.passes(table->row(n / table->H, n % table->H, b), rowText(*table, shownView(state), n)))
      t.visible.push_back(n);
  t.visible_filter = t.filter;
}

}  // namespace

void updateHeadOrder(AppState& state) {
  HeadTableView& t = state.view.table;
  const HeadTable* table = shownHeadTable(state);
  const int64_t b = state.view.focus.batch_item;
  // The order follows the table it sorts, which comes after its view's maps (compute_sync).
  const uint64_t generation = table ? table->source_stamp : 0;
  const bool order_current = generation == t.order_generation && b == t.order_batch && t.sort == t.order_sort;
  if (order_current && t.filter == t.visible_filter) return;
  if (!order_current) {
    t.order = table && b < table->B ? headOrder(*table, b, t.sort) : std::vector<int64_t>{};
    t.order_generation = generation, t.order_batch = b, t.order_sort = t.sort;
  }
  if (table) {
    filterRows(state, table);
  } else {
    t.visible.clear();
    t.visible_filter = t.filter;
  }
  markStateChanged(state);
}

std::string orderGridUnusedReason(const AppState& state) {
  return mapKindInfo(state.view.map_kind).across_layers ? "rollout and flow show one map per layer: no heads to order" : "";
}

void headTableToJson(const AppState& state, nlohmann::json& line) {
  line["head_table"] = nullptr;  // the metrics table of the focused batch item, in table order
  const HeadTable* table = shownHeadTable(state);
  if (!table) return;
  const HeadTableView& t = state.view.table;
  nlohmann::json order = nlohmann::json::array(), groups = nlohmann::json::array(), values = nlohmann::json::array();
  for (int64_t n : t.order) {
    order.push_back({n / table->H, n % table->H});
    groups.push_back(table->group(n, state.view.focus.batch_item));
    const HeadMetrics& m = table->row(n / table->H, n % table->H, state.view.focus.batch_item);
    nlohmann::json row = nlohmann::json::object();  // the numbers the table draws (null: "-")
    for (const MetricInfo& info : headMetricInfos())
      row[info.name] = std::isnan(m.*info.field) ? nlohmann::json() : nlohmann::json(m.*info.field);
    values.push_back(row);
  }
  nlohmann::json visible = nlohmann::json::array();  // the rows the filter keeps, as drawn
  for (int64_t n : t.visible) visible.push_back({n / table->H, n % table->H});
  line["head_table"] = {{"sort_column", headColumnName(t.sort.column)}, {"descending", t.sort.descending},
                        {"order_grid", t.order_grid}, {"order_grid_unused", orderGridUnusedReason(state)}, {"order", order}, {"groups", groups}, {"values", values},
                        {"filter", t.filter}, {"filter_error", t.filter_error}, {"visible", visible}};
}

}  // namespace attnscope
