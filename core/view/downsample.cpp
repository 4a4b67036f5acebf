#include "view/downsample.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "view/pool_rows.h"

namespace attnscope {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

void checkPoolSizes(const char* name, int64_t rows, int64_t cols, int64_t out_rows, int64_t out_cols) {
  if (rows < 1 || cols < 1 || out_rows < 1 || out_cols < 1 || out_rows > rows || out_cols > cols) {
    throw InputError(std::string(name) + ": cannot pool [" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "] to [" + std::to_string(out_rows) + ", " +
                     std::to_string(out_cols) + "] (need 1 <= out <= in in both dimensions)");
  }
}

// starts: [out + 1]; block k covers input indices [starts[k], starts[k + 1]).
std::vector<int64_t> blockStarts(int64_t in, int64_t out) {
  std::vector<int64_t> starts(static_cast<size_t>(out + 1));
  for (int64_t k = 0; k <= out; ++k) starts[k] = k * in / out;
  return starts;
}

// Each block row of the map folded column by column over its input rows first (contiguous,
// vectorised loops; a cell is read once), then each output cell over its block's columns.
// Max: order does not matter. Max-abs: the value with the largest |v| and, of a tie, the first
// in row-major order, so each column keeps the first row reaching its largest |v| and the
// block takes the column with the largest |v|, of a tie the earliest row, then column.
class BlockRowFold {
 public:
  BlockRowFold(int64_t cols, bool by_abs) : by_abs_(by_abs), best_(cols), abs_(by_abs ? cols : 0), row_(by_abs ? cols : 0) {}

  void start() {
    std::fill(best_.begin(), best_.end(), kMasked);
    std::fill(abs_.begin(), abs_.end(), -1.0f);  // below any |v|: no unmasked cell yet
    std::fill(row_.begin(), row_.end(), 0);
  }

  // Input row i (values and mask at the map's stride), its cells as read.
  void add(const MaskedMap& map, int64_t i) {
    const RowCells row{map.values ? map.values + i * map.ld : nullptr, map.allowed ? map.allowed + i * map.ld : nullptr,
                       static_cast<int64_t>(best_.size())};
    if (by_abs_)
      foldRowMaxAbs(row, static_cast<int32_t>(i), best_.data(), abs_.data(), row_.data());
    else
      foldRowMax(row, best_.data());
  }

  // Output cell of the columns [begin, end).
  float cell(int64_t begin, int64_t end) const {
    if (!by_abs_) return *std::max_element(best_.begin() + begin, best_.begin() + end);
    int64_t pick = begin;
    for (int64_t j = begin + 1; j < end; ++j)
      if (abs_[j] > abs_[pick] || (abs_[j] == abs_[pick] && row_[j] < row_[pick])) pick = j;
    return abs_[pick] < 0.0f ? kMasked : best_[pick];
  }

 private:
  bool by_abs_;
  std::vector<float> best_, abs_;  // [cols] per column: its extreme as read, its |v| (-1: all masked)
  std::vector<int32_t> row_;       // [cols] the input row of abs_
};

Tensor pool2d(const char* name, const MaskedMap& map, int64_t out_rows, int64_t out_cols, bool by_abs,
              const PooledRowsRead& rows_read) {
  const int64_t rows = map.rows, cols = map.cols;
  checkPoolSizes(name, rows, cols, out_rows, out_cols);
  const std::vector<int64_t> row_starts = blockStarts(rows, out_rows);
  const std::vector<int64_t> col_starts = blockStarts(cols, out_cols);
  Tensor out({out_rows, out_cols}, kMasked);
  BlockRowFold fold(cols, by_abs);
  for (int64_t r = 0; r < out_rows; ++r) {
    if (rows_read) rows_read(row_starts[r], row_starts[r + 1]);  // before: the fold then reads them from cache
    fold.start();
    for (int64_t i = row_starts[r]; i < row_starts[r + 1]; ++i) fold.add(map, i);
    float* out_row = out.data.data() + r * out_cols;  // [out_cols]
    for (int64_t c = 0; c < out_cols; ++c) out_row[c] = fold.cell(col_starts[c], col_starts[c + 1]);
  }
  return out;
}

}  // namespace

Tensor maxPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows, int64_t out_cols) {
  return maxPool2d(MaskedMap{values, nullptr, rows, cols, cols}, out_rows, out_cols);
}

Tensor maxAbsPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows,
                    int64_t out_cols) {
  return maxAbsPool2d(MaskedMap{values, nullptr, rows, cols, cols}, out_rows, out_cols);
}

Tensor maxPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols, const PooledRowsRead& rows_read) {
  return pool2d("maxPool2d", map, out_rows, out_cols, false, rows_read);
}

Tensor maxAbsPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols, const PooledRowsRead& rows_read) {
  return pool2d("maxAbsPool2d", map, out_rows, out_cols, true, rows_read);
}

}  // namespace attnscope
