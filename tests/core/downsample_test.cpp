// maxPool2d / maxAbsPool2d: block pooling for drawing maps larger than the screen. Checked
// against a float64 brute force that assigns every input cell to its block on its own
// (a double-precision search over the block rule, not the library's boundary table),
// over many sizes, with masked (-inf) cells, spikes and the mask edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "view/downsample.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// owner[i]: the output index whose block [floor(k * in / out), floor((k + 1) * in / out))
// holds input index i, found by a linear search in double precision.
std::vector<int64_t> referenceOwners(int64_t in, int64_t out) {
  std::vector<int64_t> owner(static_cast<size_t>(in), -1);
  for (int64_t k = 0; k < out; ++k) {
    const double begin = std::floor(static_cast<double>(k) * in / out);
    const double end = std::floor(static_cast<double>(k + 1) * in / out);
    for (int64_t i = 0; i < in; ++i) {
      if (i >= begin && i < end) owner[i] = k;
    }
  }
  return owner;
}

struct ReferencePools {
  std::vector<double> max;      // [out_rows, out_cols]
  std::vector<double> max_abs;  // [out_rows, out_cols]
  std::vector<int64_t> count;   // [out_rows, out_cols] input cells per block
};

// values: [rows, cols] -> both pools by brute force in float64.
ReferencePools referencePools(const std::vector<float>& values, int64_t rows, int64_t cols,
                              int64_t out_rows, int64_t out_cols) {
  const std::vector<int64_t> row_owner = referenceOwners(rows, out_rows);
  const std::vector<int64_t> col_owner = referenceOwners(cols, out_cols);
  const size_t out_cells = static_cast<size_t>(out_rows * out_cols);
  ReferencePools ref{std::vector<double>(out_cells, -INFINITY), std::vector<double>(out_cells, -INFINITY),
                     std::vector<int64_t>(out_cells, 0)};
  std::vector<bool> has_unmasked(out_cells, false);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const size_t o = static_cast<size_t>(row_owner[i] * out_cols + col_owner[j]);
      const double v = values[i * cols + j];
      ref.count[o] += 1;
      if (v > ref.max[o]) ref.max[o] = v;
      if (std::isinf(v) && v < 0) continue;  // masked: never an extreme
      if (!has_unmasked[o] || std::fabs(v) > std::fabs(ref.max_abs[o])) ref.max_abs[o] = v;
      has_unmasked[o] = true;
    }
  }
  return ref;
}

// [rows, cols] normal values, about `masked_fraction` of them -inf.
std::vector<float> randomMap(int64_t rows, int64_t cols, double masked_fraction, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::bernoulli_distribution masked(masked_fraction);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = masked(rng) ? -kInf : normal(rng);
  return values;
}

struct PoolCase {
  int64_t rows, cols, out_rows, out_cols;
};

std::string caseName(const PoolCase& c) {
  return "[" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + "] -> [" +
         std::to_string(c.out_rows) + ", " + std::to_string(c.out_cols) + "]";
}

TEST(Downsample, MatchesFloat64BruteForceOverSizes) {
  const PoolCase cases[] = {
      {8, 8, 4, 4},     {12, 6, 3, 2},     {16, 16, 2, 8},    // exact division
      {7, 5, 3, 2},     {10, 13, 4, 5},    {100, 3, 7, 3},    // non-divisible
      {1031, 1500, 1024, 1024},                               // just over the GUI cap
      {9, 11, 9, 11},   {1, 1, 1, 1},                         // identity
      {1, 37, 1, 5},    {1, 37, 1, 1},     {37, 1, 5, 1},     {37, 1, 1, 1},  // 1xN, Nx1
      {5, 6, 1, 1},     {64, 3, 63, 2},
  };
  std::mt19937 rng(11);
  for (const PoolCase& c : cases) {
    for (double masked_fraction : {0.0, 0.3, 0.9}) {
      const std::vector<float> values = randomMap(c.rows, c.cols, masked_fraction, rng);
      const Tensor max = maxPool2d(values.data(), c.rows, c.cols, c.out_rows, c.out_cols);
      const Tensor max_abs = maxAbsPool2d(values.data(), c.rows, c.cols, c.out_rows, c.out_cols);
      const ReferencePools ref = referencePools(values, c.rows, c.cols, c.out_rows, c.out_cols);
      ASSERT_EQ(max.shape, (Shape{c.out_rows, c.out_cols})) << caseName(c);
      ASSERT_EQ(max_abs.shape, (Shape{c.out_rows, c.out_cols})) << caseName(c);
      for (size_t o = 0; o < ref.max.size(); ++o) {
        ASSERT_GE(ref.count[o], 1) << caseName(c) << ": empty block " << o;
        // Pooling only picks input values, so the match is exact.
        ASSERT_EQ(static_cast<double>(max.data[o]), ref.max[o]) << caseName(c) << " max at " << o;
        ASSERT_EQ(static_cast<double>(max_abs.data[o]), ref.max_abs[o]) << caseName(c) << " max-abs at " << o;
      }
    }
  }
}

// A MaskedMap (a window of a larger map at its row stride, read through a mask, or a mask
// on its own) pools to the same numbers as its masked copy, checked by the brute force.
TEST(Downsample, MaskedMapsPoolLikeTheirMaskedCopy) {
  struct WindowCase {
    int64_t rows, cols, row0, col0, out_rows, out_cols;  // the window of a [rows + 5, cols + 7] map
  };
  const WindowCase cases[] = {{300, 280, 3, 6, 256, 256}, {12, 9, 0, 0, 5, 4}, {1, 40, 2, 1, 1, 7},
                              {513, 3, 4, 7, 256, 3},    {40, 40, 5, 7, 40, 40}};
  std::mt19937 rng(17);
  for (const WindowCase& c : cases) {
    const int64_t ld = c.cols + 7, full_rows = c.rows + 5;
    const std::vector<float> values = randomMap(full_rows, ld, 0.0, rng);
    std::vector<uint8_t> allowed(values.size());
    std::bernoulli_distribution allow(0.6);
    for (uint8_t& a : allowed) a = allow(rng);
    const size_t first = static_cast<size_t>(c.row0 * ld + c.col0);
    for (const bool with_values : {true, false}) {
      // The copy the texture used to make: the window's cells, -inf where masked (1 for a mask).
      std::vector<float> copy;
      for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
          const size_t k = first + static_cast<size_t>(i * ld + j);
          copy.push_back(!allowed[k] ? -kInf : with_values ? values[k] : 1.0f);
        }
      const ReferencePools ref = referencePools(copy, c.rows, c.cols, c.out_rows, c.out_cols);
      const MaskedMap map{with_values ? values.data() + first : nullptr, allowed.data() + first, c.rows, c.cols, ld};
      const Tensor max = maxPool2d(map, c.out_rows, c.out_cols);
      const Tensor max_abs = maxAbsPool2d(map, c.out_rows, c.out_cols);
      const std::string name = "window of " + caseName({c.rows, c.cols, c.out_rows, c.out_cols}) +
                               (with_values ? "" : " (mask only)");
      ASSERT_EQ(max.shape, (Shape{c.out_rows, c.out_cols})) << name;
      for (size_t o = 0; o < ref.max.size(); ++o) {
        ASSERT_EQ(static_cast<double>(max.data[o]), ref.max[o]) << name << " max at " << o;
        ASSERT_EQ(static_cast<double>(max_abs.data[o]), ref.max_abs[o]) << name << " max-abs at " << o;
      }
    }
    // No mask: the plain pools of the window.
    const MaskedMap unmasked{values.data() + first, nullptr, c.rows, c.cols, ld};
    std::vector<float> window;
    for (int64_t i = 0; i < c.rows; ++i)
      window.insert(window.end(), values.begin() + static_cast<std::ptrdiff_t>(first + i * ld),
                    values.begin() + static_cast<std::ptrdiff_t>(first + i * ld + c.cols));
    EXPECT_EQ(maxPool2d(unmasked, c.out_rows, c.out_cols).data,
              maxPool2d(window.data(), c.rows, c.cols, c.out_rows, c.out_cols).data);
  }
}

TEST(Downsample, SameSizeIsTheIdentity) {
  std::mt19937 rng(5);
  const std::vector<float> values = randomMap(13, 29, 0.25, rng);
  EXPECT_EQ(maxPool2d(values.data(), 13, 29, 13, 29).data, values);
  EXPECT_EQ(maxAbsPool2d(values.data(), 13, 29, 13, 29).data, values);
}

TEST(Downsample, LongContext4096To512SpotChecks) {
  const int64_t n = 4096, out = 512;  // blocks of exactly 8 x 8
  std::mt19937 rng(3);
  std::vector<float> values = randomMap(n, n, 0.1, rng);
  const int64_t spike_i = 1234, spike_j = 3001;
  values[spike_i * n + spike_j] = 1000.0f;
  values[77 * n + 4095] = -2000.0f;
  const Tensor max = maxPool2d(values.data(), n, n, out, out);
  const Tensor max_abs = maxAbsPool2d(values.data(), n, n, out, out);
  ASSERT_EQ(max.shape, (Shape{out, out}));
  EXPECT_EQ(max.data[(spike_i / 8) * out + spike_j / 8], 1000.0f);
  EXPECT_EQ(max_abs.data[(spike_i / 8) * out + spike_j / 8], 1000.0f);
  EXPECT_EQ(max_abs.data[(77 / 8) * out + 4095 / 8], -2000.0f);
  std::uniform_int_distribution<int64_t> pick(0, out - 1);
  for (int spot = 0; spot < 200; ++spot) {
    const int64_t r = spot == 0 ? 0 : spot == 1 ? out - 1 : pick(rng);
    const int64_t c = spot == 0 ? 0 : spot == 1 ? out - 1 : pick(rng);
    double expected_max = -INFINITY, expected_abs = -INFINITY;
    for (int64_t i = 8 * r; i < 8 * r + 8; ++i) {
      for (int64_t j = 8 * c; j < 8 * c + 8; ++j) {
        const double v = values[i * n + j];
        expected_max = std::max(expected_max, v);
        if (v != -INFINITY && (expected_abs == -INFINITY || std::fabs(v) > std::fabs(expected_abs))) expected_abs = v;
      }
    }
    EXPECT_EQ(max.data[r * out + c], expected_max) << "block " << r << ", " << c;
    EXPECT_EQ(max_abs.data[r * out + c], expected_abs) << "block " << r << ", " << c;
  }
}

TEST(Downsample, SingleSpikeSurvivesEverywhere) {
  const int64_t rows = 37, cols = 53, out_rows = 5, out_cols = 7;
  const std::vector<int64_t> row_owner = referenceOwners(rows, out_rows);
  const std::vector<int64_t> col_owner = referenceOwners(cols, out_cols);
  for (int64_t si = 0; si < rows; si += 4) {
    for (int64_t sj = 0; sj < cols; sj += 3) {
      std::vector<float> values(static_cast<size_t>(rows * cols), 1e-6f);
      values[si * cols + sj] = 1.0f;
      const Tensor max = maxPool2d(values.data(), rows, cols, out_rows, out_cols);
      std::vector<float> negative(values.size(), 0.01f);
      negative[si * cols + sj] = -4.0f;
      const Tensor max_abs = maxAbsPool2d(negative.data(), rows, cols, out_rows, out_cols);
      for (int64_t r = 0; r < out_rows; ++r) {
        for (int64_t c = 0; c < out_cols; ++c) {
          const bool owns = r == row_owner[si] && c == col_owner[sj];
          EXPECT_EQ(max.data[r * out_cols + c], owns ? 1.0f : 1e-6f) << si << ", " << sj;
          EXPECT_EQ(max_abs.data[r * out_cols + c], owns ? -4.0f : 0.01f) << si << ", " << sj;
        }
      }
    }
  }
}

TEST(Downsample, MaskedCellsOnlyWinAWhollyMaskedBlock) {
  // Causal [8, 8] -> [2, 2] blocks of 4 x 4: top-right all masked, diagonal half masked.
  std::vector<float> values(64);
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 8; ++j) values[i * 8 + j] = j > i ? -kInf : -1.0f - static_cast<float>(i + j);
  }
  const Tensor max = maxPool2d(values.data(), 8, 8, 2, 2);
  EXPECT_EQ(max.data, (std::vector<float>{-1.0f, -kInf, -5.0f, -9.0f}));
  const Tensor max_abs = maxAbsPool2d(values.data(), 8, 8, 2, 2);
  EXPECT_EQ(max_abs.data, (std::vector<float>{-7.0f, -kInf, -11.0f, -15.0f}));
}

TEST(Downsample, PartlyMaskedBlockTakesItsUnmaskedExtreme) {
  const std::vector<float> values = {-kInf, -3.0f, -kInf, -7.0f,   // block 0: two unmasked
                                     -kInf, 0.0f, -kInf, -kInf};   // block 1: one zero
  // [2, 4] -> [1, 2]: blocks are columns {0, 1} and {2, 3} of both rows.
  const Tensor max = maxPool2d(values.data(), 2, 4, 1, 2);
  const Tensor max_abs = maxAbsPool2d(values.data(), 2, 4, 1, 2);
  EXPECT_EQ(max.data, (std::vector<float>{0.0f, -7.0f}));
  EXPECT_EQ(max_abs.data, (std::vector<float>{-3.0f, -7.0f}));
  const std::vector<float> zero_among_masked = {-kInf, 0.0f, -kInf, -kInf};
  EXPECT_EQ(maxAbsPool2d(zero_among_masked.data(), 1, 4, 1, 1).data, std::vector<float>{0.0f});
  EXPECT_EQ(maxPool2d(zero_among_masked.data(), 1, 4, 1, 1).data, std::vector<float>{0.0f});
}

TEST(Downsample, MaxAbsKeepsTheSignAndTheFirstOfATie) {
  const std::vector<float> values = {2.0f, -2.0f, -5.0f, 4.0f, -1.0f, 1.0f};
  EXPECT_EQ(maxAbsPool2d(values.data(), 1, 6, 1, 3).data, (std::vector<float>{2.0f, -5.0f, -1.0f}));
  EXPECT_EQ(maxPool2d(values.data(), 1, 6, 1, 3).data, (std::vector<float>{2.0f, 4.0f, 1.0f}));
}

// Of equal |v| across rows, the first in row-major order wins, whichever column it is in.
TEST(Downsample, MaxAbsTieGoesToTheFirstRowThenColumn) {
  for (const auto& [values, want] : {std::pair{std::vector<float>{1.0f, 2.0f, -2.0f, 0.0f}, 2.0f},
                                     std::pair{std::vector<float>{0.0f, -2.0f, 2.0f, 0.0f}, -2.0f},
                                     std::pair{std::vector<float>{-kInf, -kInf, -3.0f, 3.0f}, -3.0f},
                                     std::pair{std::vector<float>{-kInf, -kInf, -kInf, -kInf}, -kInf}}) {
    EXPECT_EQ(maxAbsPool2d(values.data(), 2, 2, 1, 1).data, std::vector<float>{want});
    const std::vector<float> brute = {static_cast<float>(referencePools(values, 2, 2, 1, 1).max_abs[0])};
    EXPECT_EQ(maxAbsPool2d(values.data(), 2, 2, 1, 1).data, brute);
  }
}

TEST(Downsample, BadSizesNameTheShapes) {
  const std::vector<float> values(16, 0.0f);
  try {
    maxPool2d(values.data(), 4, 4, 5, 4);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 4] to [5, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(maxAbsPool2d(values.data(), 4, 4, 0, 4), InputError);
  EXPECT_THROW(maxPool2d(values.data(), 4, 4, 4, -1), InputError);
  EXPECT_THROW(maxPool2d(values.data(), 0, 4, 0, 4), InputError);
}

}  // namespace
}  // namespace attnscope
