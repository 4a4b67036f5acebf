// Comparing maps: A - B on a symmetric range with the largest differences listed (two
// heads, two layers, or one head under two settings such as the mistakes lab's buggy and
// correct runs), and query focus: chosen query rows across every layer and head.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/map_stack.h"
#include "tensor/tensor.h"

namespace attnscope {

struct MapCell {
  int64_t row = 0, col = 0;  // query i, key j
  float a = 0, b = 0;        // the two maps' values
  float diff = 0;            // a - b
};

struct MapComparison {
  Tensor difference;             // [rows, cols] a - b
  float abs_max = 0;             // symmetric colour range [-abs_max, abs_max] (0 when equal)
  std::vector<MapCell> largest;  // up to top_k cells with diff != 0, largest |diff| first (ties row-major)
};

// a, b: [rows, cols] row-major. Non-finite cells (masked scores) compare as 0 - 0 when both
// are masked and are skipped from the list when only one is. Throws InputError for empty maps.
MapComparison compareMaps(const float* a, const float* b, int64_t rows, int64_t cols, size_t top_k = 10);
// The same for two tensors whose last two dimensions are the map; InputError naming both
// shapes when they differ.
MapComparison compareMaps(const Tensor& a, const Tensor& b, size_t top_k = 10);

enum class RowCombine { Sum, Mean };

// focus: [layers, H, S], the query rows `queries` of batch item b in every map, summed or
// averaged (fully masked rows count as rows of zeros). InputError for a row or batch item
// out of range or no row.
Tensor queryFocus(const MapStack& maps, int64_t b, const std::vector<int64_t>& queries, RowCombine combine);

}  // namespace attnscope
