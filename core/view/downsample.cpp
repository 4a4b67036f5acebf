#include "view/downsample.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// Folds every cell of each block into its output cell with keep(candidate, current) ->
// true when the candidate replaces the current value; outputs start masked (-inf).
template <typename Keep>
Tensor pool2d(const char* name, const MaskedMap& map, int64_t out_rows, int64_t out_cols, Keep keep) {
  const int64_t rows = map.rows, cols = map.cols;
  checkPoolSizes(name, rows, cols, out_rows, out_cols);
  const std::vector<int64_t> row_starts = blockStarts(rows, out_rows);
  const std::vector<int64_t> col_starts = blockStarts(cols, out_cols);
  Tensor out({out_rows, out_cols}, kMasked);
  for (int64_t r = 0; r < out_rows; ++r) {
    float* out_row = out.data.data() + r * out_cols;  // [out_cols]
    for (int64_t i = row_starts[r]; i < row_starts[r + 1]; ++i) {
      const float* in_row = map.values ? map.values + i * map.ld : nullptr;      // [cols]
      const uint8_t* in_mask = map.allowed ? map.allowed + i * map.ld : nullptr;  // [cols]
      for (int64_t c = 0; c < out_cols; ++c) {
        float best = out_row[c];
        for (int64_t j = col_starts[c]; j < col_starts[c + 1]; ++j) {
          const float v = in_mask && !in_mask[j] ? kMasked : in_row ? in_row[j] : 1.0f;
          if (keep(v, best)) best = v;
        }
        out_row[c] = best;
      }
    }
  }
  return out;
}

// Lambdas, not functions: pool2d is instantiated for each, so the test inlines.
const auto keepLarger = [](float candidate, float best) { return candidate > best; };

// A masked current value loses to any unmasked candidate, even one of |v| == 0.
const auto keepLargerAbs = [](float candidate, float best) {
  if (candidate == kMasked) return false;
  return best == kMasked || std::fabs(candidate) > std::fabs(best);
};

}  // namespace

Tensor maxPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows, int64_t out_cols) {
  return maxPool2d(MaskedMap{values, nullptr, rows, cols, cols}, out_rows, out_cols);
}

Tensor maxAbsPool2d(const float* values, int64_t rows, int64_t cols, int64_t out_rows,
                    int64_t out_cols) {
  return maxAbsPool2d(MaskedMap{values, nullptr, rows, cols, cols}, out_rows, out_cols);
}

Tensor maxPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols) {
  return pool2d("maxPool2d", map, out_rows, out_cols, keepLarger);
}

Tensor maxAbsPool2d(const MaskedMap& map, int64_t out_rows, int64_t out_cols) {
  return pool2d("maxAbsPool2d", map, out_rows, out_cols, keepLargerAbs);
}

}  // namespace attnscope
