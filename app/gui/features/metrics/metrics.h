// The head metrics table beside the grid: one row per (layer, head) of the focused batch
// item, sortable, with head groups; the grid can follow its order.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "analysis/head_table.h"

namespace attnscope {

struct AppState;
struct ColumnSpace;

// Recomputes view.table.order when the table, batch item or sort changed, and the rows the
// filter keeps (view.table.visible) when those or the filter changed (not per frame).
void updateHeadOrder(AppState& state);
// "L3 H5" (several layers) or "head 5": a row's label.
std::string headLabel(const HeadTable& table, int64_t n);
// Its width at the right of the head grid's band: the dragged panel_sizes.table of the centre
// column, else 42% of it (280 to 520 px).
float metricsWidth(const AppState& state, const ColumnSpace& space);
// Why "order grid by table" does nothing now ("" when it orders the grid): drawn greyed.
std::string orderGridUnusedReason(const AppState& state);
void drawMetricsPanel(AppState& state);
// State-log keys: head_table (with filter, filter_error and visible: the rows the filter keeps;
// order_grid_unused: orderGridUnusedReason).
void headTableToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
