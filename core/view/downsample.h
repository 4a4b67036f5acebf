// Block pooling of one 2D map to a smaller grid, so that a map with more cells than
// screen pixels keeps its peaks when drawn (sampling one cell per pixel would skip most).
//
// Block rule shared by both functions: output cell (r, c) covers input rows
// [floor(r * rows / out_rows), floor((r + 1) * rows / out_rows)) and the same for
// columns; with out <= in every block holds at least one cell. Masked cells are -inf and
// only win when their whole block is masked. Inputs never hold NaN.
#pragma once

#include <cstdint>

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

}  // namespace attnscope
