// Block pooling of one 2D map to a smaller grid, so that a map with more cells than
// screen pixels keeps its peaks when drawn (sampling one cell per pixel would skip most).
//
// Block rule shared by both functions: output cell (r, c) covers input rows
// [floor(r * rows / out_rows), floor((r + 1) * rows / out_rows)) and the same for
// columns; with out <= in every block holds at least one cell. Masked cells are -inf and
// only win when their whole block is masked. Inputs never hold NaN.
#pragma once

#include <cstdint>
#include <functional>

#include "tensor/tensor.h"

namespace attnscope {

// values: [rows, cols], row-major -> [out_rows, out_cols]: each cell the largest value of
// its block. Throws InputError unless 1 <= out_rows <= rows and 1 <= out_cols <= cols.
Tensor maxPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows, int64_t out_cols);

// values: [rows, cols], row-major -> [out_rows, out_cols]: each cell the value of its
// block with the largest |v|, sign kept (for diverging maps such as scores, where a plain
// max would hide the negative extremes). -inf cells are masked, not extremes: they are
// skipped unless the whole block is masked. Ties go to the first cell in row-major order.
// Same size rules as maxPool2d.
Tensor maxAbsPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows,
                    int64_t out_cols);

// A map as a texture reads it, without a masked copy: [rows, cols] cells at row stride ld
// (a window of a larger map), read as -inf where allowed (same stride; null = every cell
// allowed) is 0, and as 1 everywhere else when values is null (a mask's own texture).
struct MaskedMap {
  const float* values = nullptr;
  const uint8_t* allowed = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
};
// maxPool2d / maxAbsPool2d of the cells as read: the same numbers as pooling the masked copy.
// rows_read(first, end), when set, is called before each block of input rows [first, end) is
// pooled: a caller measuring the map reads those rows then, and the pooling from cache.
using PooledRowsRead = std::function<void(int64_t first, int64_t end)>;
Tensor maxPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols, const PooledRowsRead& rows_read = {});
Tensor maxAbsPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols, const PooledRowsRead& rows_read = {});

}  // namespace attnscope
