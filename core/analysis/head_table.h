// The head table of one view model, built with it off the UI thread: every head's metrics
// and, per batch item, the groups of heads that attend alike, plus the orders the app's
// sortable table and its head grid follow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/generation_mass.h"
#include "analysis/head_clusters.h"
#include "analysis/head_metrics.h"
#include "view/view_model.h"

namespace attnscope {

// Groups of batch item b: clusterHeads(maps, b, min_correlation) for every b ([B]).
std::vector<HeadClusters> clustersPerItem(const MapStack& maps, double min_correlation = 0.5);

struct HeadTable {
  const ViewModel* source = nullptr;  // the view model measured (borrowed; identity only)
  uint64_t source_stamp = 0;          // ... its ViewModel::stamp: what a cache compares (an address can be reused)
  int64_t layers = 0, H = 0, B = 0;
  int64_t L = 0, S = 0;                // the measured maps' queries and keys (a tiled view's real ones)
  std::vector<HeadMetrics> metrics;    // [layers, H, B], as headMetrics orders them
  std::vector<HeadClusters> clusters;  // [B]

  const HeadMetrics& row(int64_t layer, int64_t head, int64_t b) const {
    return metrics[static_cast<size_t>((layer * H + head) * B + b)];
  }
  // Group of head n = layer * H + head in batch item b.
  int64_t group(int64_t n, int64_t b) const { return clusters[static_cast<size_t>(b)].group[static_cast<size_t>(n)]; }
};

// A tiled view's table comes from what its overview measured of the real maps
// (TiledMaps::metric_sums, block_means; InputError when it measured nothing).
// A generation's view (first_generated >= 0) also gets the gen_* columns, over the last
// recent_window keys (analysis/generation_mass.h).
// keep_going (when set) is asked before each map's metrics; once it says false: Cancelled
// (the app stops measuring an older view's table when a newer edit is posted).
HeadTable headTableOf(const ViewModel& view, double min_correlation = 0.5, int64_t recent_window = kDefaultRecentWindow,
                      const std::function<bool()>& keep_going = {});

// What a tiled overview measures for the head table, as headTableOf measures a full view:
// every metric, block means of kClusterPoolSide for the groups, and the induction keys of
// each batch item whose query tokens ([B][L]) hold a repeated segment (L == S only).
OverviewMeasures headTableMeasures(int64_t L, int64_t S, const std::vector<std::vector<std::string>>& query_tokens);

// Columns the table can be sorted by: the head itself (layer-major order), its group, or
// metric k of headMetricInfos() (column kFirstMetricColumn + k).
inline constexpr int kHeadColumn = 0, kGroupColumn = 1, kFirstMetricColumn = 2;
struct HeadSort {
  int column = kHeadColumn;
  bool descending = false;
  bool operator==(const HeadSort& o) const { return column == o.column && descending == o.descending; }
  bool operator!=(const HeadSort& o) const { return !(*this == o); }
};
// "head", "group", or the metric's JSON name ("entropy_bits", ...); "" when out of range.
std::string headColumnName(int column);
int headColumnCount();  // kFirstMetricColumn + the number of metrics

// [layers * H] heads n = layer * H + head of batch item b in the sorted order; NaN metrics
// go last, ties keep layer-major order. Out-of-range columns sort by head.
std::vector<int64_t> headOrder(const HeadTable& table, int64_t b, HeadSort sort);

}  // namespace attnscope
