#include "analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace attnscope {

MapComparison compareMaps(const float* a, const float* b, int64_t rows, int64_t cols, size_t top_k) {
  if (rows < 1 || cols < 1)
    throw InputError("compare: empty maps [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  MapComparison result;
  result.difference = Tensor({rows, cols});
  std::vector<MapCell> cells;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = i * cols + j;
      const bool finite_a = std::isfinite(a[k]), finite_b = std::isfinite(b[k]);
      if (!finite_a || !finite_b) continue;  // masked: 0 when both are, skipped when one is
      const float diff = a[k] - b[k];
      result.difference.data[k] = diff;
      result.abs_max = std::max(result.abs_max, std::fabs(diff));
      if (diff != 0.0f) cells.push_back({i, j, a[k], b[k], diff});
    }
  const size_t keep = std::min(top_k, cells.size());
  std::partial_sort(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(keep), cells.end(),
                    [](const MapCell& x, const MapCell& y) {
                      const float ax = std::fabs(x.diff), ay = std::fabs(y.diff);
                      if (ax != ay) return ax > ay;
                      return x.row != y.row ? x.row < y.row : x.col < y.col;
                    });
  cells.resize(keep);
  result.largest = std::move(cells);
  return result;
}

MapComparison compareMaps(const Tensor& a, const Tensor& b, size_t top_k) {
  if (a.shape != b.shape || a.shape.size() < 2)
    throw InputError("compare: the maps differ in shape (" + shapeToString(a.shape) + " and " +
                     shapeToString(b.shape) + ")");
  const int64_t cols = a.shape.back(), rows = a.shape[a.shape.size() - 2];
  if (numel(a.shape) != rows * cols)
    throw InputError("compare: expected one [L, S] map, got " + shapeToString(a.shape));
  return compareMaps(a.data.data(), b.data.data(), rows, cols, top_k);
}

Tensor queryFocus(const MapStack& maps, int64_t b, const std::vector<int64_t>& queries, RowCombine combine) {
  if (b < 0 || b >= maps.B)
    throw InputError("query focus: batch item " + std::to_string(b) + " out of range (B=" + std::to_string(maps.B) + ")");
  if (queries.empty()) throw InputError("query focus: no query row chosen");
  for (int64_t i : queries)
    if (i < 0 || i >= maps.L)
      throw InputError("query focus: query " + std::to_string(i) + " out of range (L=" + std::to_string(maps.L) + ")");
  Tensor focus({maps.layers, maps.H, maps.S});
  const double scale = combine == RowCombine::Mean ? 1.0 / static_cast<double>(queries.size()) : 1.0;
  for (int64_t layer = 0; layer < maps.layers; ++layer)
    for (int64_t h = 0; h < maps.H; ++h) {
      const float* map = maps.map(layer, b, h);                          // [L, S]
      float* out = focus.data.data() + (layer * maps.H + h) * maps.S;  // [S]
      for (int64_t j = 0; j < maps.S; ++j) {
        double sum = 0;
        for (int64_t i : queries) sum += map[i * maps.S + j];
        out[j] = static_cast<float>(sum * scale);
      }
    }
  return focus;
}

}  // namespace attnscope
