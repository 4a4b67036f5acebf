// Groups of heads that attend alike: Pearson correlation of their maps, then
// average-linkage agglomerative clustering.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/map_stack.h"

namespace attnscope {

// Maps with more than this many rows or columns are block-mean pooled to this size
// before correlating (same block rule as view/downsample.h), keeping the cost bounded.
constexpr int64_t kClusterPoolSide = 64;

struct HeadClusters {
  int64_t count = 0;                // number of groups
  std::vector<double> correlation;  // [N, N], N = layers * H, head index n = layer * H + head
  std::vector<int64_t> group;       // [N] group of each head, numbered 0.. by first head (layer-major)
  std::vector<int64_t> order;       // [N] heads group by group (members in layer-major order)
};

// Pearson correlation of two equally long vectors; two constant vectors correlate 1 when
// equal and 0 otherwise, a constant and a varying one 0.
double pearson(const std::vector<double>& a, const std::vector<double>& b);

// Correlates every pair of heads over the maps of batch item `batch` (-1 = all items,
// concatenated), then merges the two groups with the highest mean pairwise correlation
// while it is at least min_correlation. InputError for a batch item out of range.
HeadClusters clusterHeads(const MapStack& maps, int64_t batch = -1, double min_correlation = 0.5);
// The same grouping of N heads given as their pooled maps ([N] equally long vectors, e.g.
// a tiled source's block means, measured without holding the maps).
HeadClusters clusterVectors(const std::vector<std::vector<double>>& vectors, double min_correlation = 0.5);

}  // namespace attnscope
