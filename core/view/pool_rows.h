// One input row folded into a pooled block row's per-column extremes (view/downsample.cpp),
// vectorised with Google Highway (runtime dispatch): pooling reads every cell of every map of
// a result, 1M cells per map at 1,000 tokens.
#pragma once

#include <cstdint>

namespace attnscope {

// A row of `cols` cells as read: values[j] where allowed[j] (null: every cell), -inf where not;
// 1 for every allowed cell when values is null (a mask's own texture). Neither holds NaN.
struct RowCells {
  const float* values = nullptr;
  const uint8_t* allowed = nullptr;
  int64_t cols = 0;
};

// best[j] = max(best[j], cell j).
void foldRowMax(const RowCells& row, float* best);

// Where |cell j| > abs[j] (a masked cell, or -inf, counts as -1: below every |v|):
// abs[j] = |cell j|, best[j] = cell j, first_row[j] = row_index (ties keep the earlier row).
void foldRowMaxAbs(const RowCells& row, int32_t row_index, float* best, float* abs, int32_t* first_row);

}  // namespace attnscope
