#include "analysis/head_table.h"

#include "analysis/generation_mass.h"
#include "tensor/interrupt.h"

#include <algorithm>

namespace attnscope {

std::vector<HeadClusters> clustersPerItem(const MapStack& maps, double min_correlation) {
  std::vector<HeadClusters> clusters;
  for (int64_t b = 0; b < maps.B; ++b) clusters.push_back(clusterHeads(maps, b, min_correlation));
  return clusters;
}

namespace {

// A tiled source: its maps here are the overview (block maxima), so the numbers come from
// what its pass measured of the real maps: the metric sums and the block means.
HeadTable tiledHeadTable(const ViewModel& view, double min_correlation) {
  const TiledMaps& m = *view.tiled;
  const int64_t maps = view.layers * view.B * view.H;
  const size_t cells = static_cast<size_t>(m.mean_rows * m.mean_cols);
  if (m.metric_sums.size() != static_cast<size_t>(maps) || m.block_means.size() != static_cast<size_t>(maps) * cells)
    throw InputError("head table: the tiled overview was computed without head metrics");
  HeadTable table;
  table.source = &view;
  table.source_stamp = view.stamp.value();
  table.layers = view.layers, table.H = view.H, table.B = view.B;
  table.L = m.L, table.S = m.S;
  // Rows in headMetrics' order (layer, head, batch item); sums and means are [layers, B, H].
  const auto map = [&](int64_t l, int64_t b, int64_t h) { return static_cast<size_t>((l * view.B + b) * view.H + h); };
  for (int64_t l = 0; l < view.layers; ++l)
    for (int64_t h = 0; h < view.H; ++h)
      for (int64_t b = 0; b < view.B; ++b) {
        HeadMetrics row = headMetricsOf(m.metric_sums[map(l, b, h)]);
        row.layer = l, row.head = h, row.batch = b;
        table.metrics.push_back(row);
      }
  for (int64_t b = 0; b < view.B; ++b) {
    std::vector<std::vector<double>> vectors;  // [layers * H], as clusterHeads numbers them
    for (int64_t l = 0; l < view.layers; ++l)
      for (int64_t h = 0; h < view.H; ++h) {
        const auto first = m.block_means.begin() + static_cast<std::ptrdiff_t>(map(l, b, h) * cells);
        vectors.emplace_back(first, first + static_cast<std::ptrdiff_t>(cells));
      }
    table.clusters.push_back(clusterVectors(vectors, min_correlation));
  }
  return table;
}

}  // namespace

HeadTable headTableOf(const ViewModel& view, double min_correlation, int64_t recent_window,
                      const std::function<bool()>& keep_going) {
  if (view.tiled) return tiledHeadTable(view, min_correlation);
  const MapStack maps = mapStackOf(view);
  HeadTable table;
  table.source = &view;
  table.source_stamp = view.stamp.value();
  table.layers = maps.layers, table.H = maps.H, table.B = maps.B;
  table.L = maps.L, table.S = maps.S;
  table.metrics = headMetrics(maps, keep_going);
  addGenerationMass(view, recent_window, table.metrics);
  if (keep_going && !keep_going()) throw Cancelled();
  table.clusters = clustersPerItem(maps, min_correlation);
  return table;
}

OverviewMeasures headTableMeasures(int64_t L, int64_t S, const std::vector<std::vector<std::string>>& query_tokens) {
  OverviewMeasures measures;
  measures.metrics = true;
  measures.mean_rows = std::min(L, kClusterPoolSide), measures.mean_cols = std::min(S, kClusterPoolSide);
  const size_t B = query_tokens.size();
  for (size_t b = 0; b < B; ++b) {
    std::vector<int64_t> keys = inductionKeysOf(query_tokens[b], L, S);
    if (keys.empty()) continue;
    measures.induction_keys.resize(B, std::vector<int64_t>(static_cast<size_t>(L), -1));
    measures.induction_keys[b] = std::move(keys);
  }
  return measures;
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
