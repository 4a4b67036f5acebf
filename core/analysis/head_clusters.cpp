#include "analysis/head_clusters.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace attnscope {
namespace {

// map: [rows, cols] -> [min(rows, side), min(cols, side)] block means (row-major), appended.
void appendPooled(const float* map, int64_t rows, int64_t cols, std::vector<double>& out) {
  const int64_t out_rows = std::min(rows, kClusterPoolSide), out_cols = std::min(cols, kClusterPoolSide);
  for (int64_t r = 0; r < out_rows; ++r) {
    const int64_t i0 = r * rows / out_rows, i1 = (r + 1) * rows / out_rows;
    for (int64_t c = 0; c < out_cols; ++c) {
      const int64_t j0 = c * cols / out_cols, j1 = (c + 1) * cols / out_cols;
      double sum = 0;
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) sum += map[i * cols + j];
      out.push_back(sum / static_cast<double>((i1 - i0) * (j1 - j0)));
    }
  }
}

}  // namespace

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = a.size();
  double mean_a = 0, mean_b = 0;
  for (size_t k = 0; k < n; ++k) {
    mean_a += a[k];
    mean_b += b[k];
  }
  mean_a /= static_cast<double>(n);
  mean_b /= static_cast<double>(n);
  double ab = 0, aa = 0, bb = 0;
  for (size_t k = 0; k < n; ++k) {
    const double da = a[k] - mean_a, db = b[k] - mean_b;
    ab += da * db;
    aa += da * da;
    bb += db * db;
  }
  // Below this a vector counts as constant (float maps summed in double).
  constexpr double kFlat = 1e-20;
  if (aa <= kFlat && bb <= kFlat) return a == b ? 1.0 : 0.0;
  if (aa <= kFlat || bb <= kFlat) return 0.0;
  return std::clamp(ab / std::sqrt(aa * bb), -1.0, 1.0);
}

HeadClusters clusterHeads(const MapStack& maps, int64_t batch, double min_correlation) {
  if (batch < -1 || batch >= maps.B)
    throw InputError("cluster heads: batch item " + std::to_string(batch) + " out of range (B=" +
                     std::to_string(maps.B) + ")");
  const int64_t N = maps.heads();
  std::vector<std::vector<double>> vectors(static_cast<size_t>(N));
#pragma omp parallel for schedule(dynamic)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t b = 0; b < maps.B; ++b) {
      if (batch >= 0 && b != batch) continue;
      appendPooled(maps.map(n / maps.H, b, n % maps.H), maps.L, maps.S, vectors[n]);
    }
  }
  return clusterVectors(vectors, min_correlation);
}

HeadClusters clusterVectors(const std::vector<std::vector<double>>& vectors, double min_correlation) {
  const int64_t N = static_cast<int64_t>(vectors.size());
  HeadClusters result;
  result.correlation.assign(static_cast<size_t>(N * N), 1.0);
#pragma omp parallel for schedule(dynamic)
  for (int64_t a = 0; a < N; ++a) {
    for (int64_t b = a + 1; b < N; ++b) {
      const double r = pearson(vectors[a], vectors[b]);
      result.correlation[a * N + b] = result.correlation[b * N + a] = r;
    }
  }

  // Average linkage: groups hold head indices in ascending order.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t n = 0; n < N; ++n) groups.push_back({n});
  auto linkage = [&](const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
    double sum = 0;
    for (int64_t a : x)
      for (int64_t b : y) sum += result.correlation[a * N + b];
    return sum / static_cast<double>(x.size() * y.size());
  };
  while (groups.size() > 1) {
    double best = -2;
    size_t best_x = 0, best_y = 0;
    for (size_t x = 0; x < groups.size(); ++x)
      for (size_t y = x + 1; y < groups.size(); ++y) {
        const double similarity = linkage(groups[x], groups[y]);
        if (similarity > best) {
          best = similarity;
          best_x = x;
          best_y = y;
        }
      }
    if (best < min_correlation) break;
    std::vector<int64_t>& merged = groups[best_x];
    merged.insert(merged.end(), groups[best_y].begin(), groups[best_y].end());
    std::sort(merged.begin(), merged.end());
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(best_y));
  }
  std::sort(groups.begin(), groups.end());  // by first member
  result.count = static_cast<int64_t>(groups.size());
  result.group.assign(static_cast<size_t>(N), 0);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int64_t n : groups[g]) {
      result.group[n] = static_cast<int64_t>(g);
      result.order.push_back(n);
    }
  return result;
}

}  // namespace attnscope
