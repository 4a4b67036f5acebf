#include "analysis/head_table.h"

#include <algorithm>

namespace attnscope {

std::vector<HeadClusters> clustersPerItem(const MapStack& maps, double min_correlation) {
  std::vector<HeadClusters> clusters;
  for (int64_t b = 0; b < maps.B; ++b) clusters.push_back(clusterHeads(maps, b, min_correlation));
  return clusters;
}

HeadTable headTableOf(const ViewModel& view, double min_correlation) {
  const MapStack maps = mapStackOf(view);
  HeadTable table;
  table.source = &view;
  table.layers = maps.layers, table.H = maps.H, table.B = maps.B;
  table.metrics = headMetrics(maps);
  table.clusters = clustersPerItem(maps, min_correlation);
  return table;
}

std::string headColumnName(int column) {
  if (column == kHeadColumn) return "head";
  if (column == kGroupColumn) return "group";
  const auto& infos = headMetricInfos();
  const int metric = column - kFirstMetricColumn;
  return metric >= 0 && metric < static_cast<int>(infos.size()) ? infos[static_cast<size_t>(metric)].name : "";
}

int headColumnCount() { return kFirstMetricColumn + static_cast<int>(headMetricInfos().size()); }

std::vector<int64_t> headOrder(const HeadTable& table, int64_t b, HeadSort sort) {
  const int64_t heads = table.layers * table.H;
  std::vector<int64_t> order(static_cast<size_t>(heads));
  for (int64_t n = 0; n < heads; ++n) order[n] = n;
  const auto& infos = headMetricInfos();
  const int metric = sort.column - kFirstMetricColumn;
  if (sort.column == kGroupColumn) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      const int64_t gx = table.group(x, b), gy = table.group(y, b);
      return sort.descending ? gx > gy : gx < gy;
    });
  } else if (metric >= 0 && metric < static_cast<int>(infos.size())) {
    // orderBy over batch item b's rows, which come in layer-major head order.
    std::vector<HeadMetrics> rows;
    for (int64_t n = 0; n < heads; ++n) rows.push_back(table.row(n / table.H, n % table.H, b));
    const std::vector<size_t> sorted = orderBy(rows, infos[static_cast<size_t>(metric)], sort.descending);
    for (size_t k = 0; k < sorted.size(); ++k) order[k] = static_cast<int64_t>(sorted[k]);
  } else if (sort.descending) {
    std::reverse(order.begin(), order.end());
  }
  return order;
}

}  // namespace attnscope
