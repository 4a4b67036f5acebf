// The layers x heads overview in the head grid panel: rows = layers, columns = heads, one
// cell per head coloured by one head metric (entropy, previous-token, induction, sink, ...)
// of the focused batch item, sized so that every head fits the panel (144 to 1024 heads).
// Hover previews the head's map in the tooltip; click focuses it. The numbers come from
// analysis/head_overview.h, rebuilt in the update step when the table, batch item or
// metric changes (never in draw code).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/head_overview.h"

namespace attnscope {

struct AppState;
struct ViewModel;

struct OverviewState {
  std::string metric = "entropy_bits";  // JSON name of the colouring metric
  bool auto_range = false;              // colours span the values' own range, not the metric's fixed one
  HeadOverview data;                    // of the shown head table; empty while it is missing
  uint64_t built_stamp = 0;             // what data was built for (table's view, batch item, metric, range)
  int64_t built_batch = -1;
  std::string built_metric;
  bool built_auto = false;
  int64_t hovered = -1;                 // head n = layer * H + head under the pointer (-1: none)
  float cell_w = 0, cell_h = 0, gap = 0;  // drawn last frame (state log)
};

// Rebuilds the overview's values when the head table, batch item, metric or range changed.
void updateOverview(AppState& state);
// The overview filling the rest of the current window (the grid panel).
void drawOverview(AppState& state, const ViewModel& view);
// State-log keys: overview {shown, auto, metric, rows, cols, low, high (the values' range), cells,
// cell, hovered, scale {auto, low, high, rule, narrow, warning} (what the colours span)}.
void overviewToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
