#include "gui/features/head_grid/overview.h"

#include <cmath>

#include "gui/shell/app_state.h"

namespace attnscope {

void updateOverview(AppState& state) {
  OverviewState& o = state.feature<OverviewState>();
  const HeadTable* table = shownHeadTable(state);
  const int64_t b = state.view.focus.batch_item;
  const MetricInfo* metric = findHeadMetric(o.metric);
  if (!metric) metric = &headMetricInfos().front(), o.metric = metric->name;
  const uint64_t stamp = table ? table->source_stamp : 0;
  if (stamp == o.built_stamp && b == o.built_batch && o.metric == o.built_metric && o.auto_range == o.built_auto) return;
  o.data = table && b < table->B ? headOverview(*table, *metric, b, o.auto_range) : HeadOverview{};
  o.built_stamp = stamp, o.built_batch = b, o.built_metric = o.metric, o.built_auto = o.auto_range;
  markStateChanged(state);
}

void overviewToJson(const AppState& state, nlohmann::json& line) {
  const OverviewState& o = state.feature<OverviewState>();
  const ViewModel* view = shownView(state);
  const bool shown = view && overviewShown(state, *view);
  nlohmann::json cells = nlohmann::json::array();  // [rows][cols] values (null: not measured)
  for (int64_t l = 0; shown && l < o.data.layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t h = 0; h < o.data.H; ++h) {
      const double v = o.data.at(l, h);
      row.push_back(std::isnan(v) ? nlohmann::json() : nlohmann::json(v));
    }
    cells.push_back(row);
  }
  nlohmann::json hovered;
  if (shown && o.hovered >= 0 && o.data.H > 0) hovered = {o.hovered / o.data.H, o.hovered % o.data.H};
  line["overview"] = {{"shown", shown},
                      {"auto", !state.view.overview_chosen.has_value()},
                      {"metric", o.metric},
                      {"rows", shown ? view->layers : 0},
                      {"cols", shown ? view->H : 0},
                      {"low", o.data.low},
                      {"high", o.data.high},
                      {"cells", cells},
                      {"cell", {o.cell_w, o.cell_h, o.gap}},
                      {"hovered", hovered},
                      {"scale", {{"auto", o.data.scale.automatic},
                                 {"low", o.data.scale.low},
                                 {"high", o.data.scale.high},
                                 {"rule", o.data.scale.rule},
                                 {"narrow", o.data.scale.narrow},
                                 {"warning", o.data.scale.warning}}}};
}

}  // namespace attnscope
