// Map comparison and query focus (core/analysis/compare.h): hand cases and a float64
// reference on random maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "analysis/compare.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(CompareMaps, HandCase) {
  const std::vector<float> a = {0.5f, 0.5f, 0.0f, 1.0f};
  const std::vector<float> b = {0.25f, 0.75f, 0.0f, 1.0f};
  const MapComparison c = compareMaps(a.data(), b.data(), 2, 2, 10);
  EXPECT_EQ((std::vector<float>{0.25f, -0.25f, 0.0f, 0.0f}), c.difference.data);
  EXPECT_FLOAT_EQ(0.25f, c.abs_max);
  ASSERT_EQ(2u, c.largest.size());  // zero differences are not listed
  EXPECT_EQ(0, c.largest[0].row);   // tie on |diff|: row-major order
  EXPECT_EQ(0, c.largest[0].col);
  EXPECT_FLOAT_EQ(0.25f, c.largest[0].diff);
  EXPECT_EQ(1, c.largest[1].col);
  EXPECT_FLOAT_EQ(0.5f, c.largest[1].a);
  EXPECT_FLOAT_EQ(0.75f, c.largest[1].b);
}

TEST(CompareMaps, AMapWithItselfIsAllZero) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> a(7 * 9);
  for (float& v : a) v = u(rng);
  a[5] = -kInf;  // masked score cell
  const MapComparison c = compareMaps(a.data(), a.data(), 7, 9);
  EXPECT_EQ(0.0f, c.abs_max);
  EXPECT_TRUE(c.largest.empty());
  for (float d : c.difference.data) EXPECT_EQ(0.0f, d);
}

TEST(CompareMaps, MaskedCellsAndShapes) {
  const std::vector<float> a = {-kInf, 1.0f, -kInf, 3.0f};
  const std::vector<float> b = {-kInf, -kInf, 2.0f, 1.0f};
  const MapComparison c = compareMaps(a.data(), b.data(), 1, 4);
  EXPECT_EQ((std::vector<float>{0, 0, 0, 2}), c.difference.data);
  ASSERT_EQ(1u, c.largest.size());
  EXPECT_EQ(3, c.largest[0].col);
  EXPECT_THROW(compareMaps(Tensor({2, 3}), Tensor({3, 2})), InputError);
  EXPECT_THROW(compareMaps(Tensor({2, 2, 3}), Tensor({2, 2, 3})), InputError);
  EXPECT_NO_THROW(compareMaps(Tensor({1, 2, 3}), Tensor({1, 2, 3})));
  EXPECT_THROW(compareMaps(a.data(), b.data(), 0, 4), InputError);
}

TEST(CompareMaps, AgainstFloat64ReferenceOnRandomMaps) {
  for (int64_t rows : {1, 3, 17})
    for (int64_t cols : {1, 5, 33}) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
      std::mt19937 rng(static_cast<uint32_t>(rows * 100 + cols));
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      std::vector<float> a(rows * cols), b(rows * cols);
      for (size_t k = 0; k < a.size(); ++k) a[k] = u(rng), b[k] = u(rng);
      const size_t top = 6;
      const MapComparison c = compareMaps(a.data(), b.data(), rows, cols, top);
      std::vector<std::pair<double, int64_t>> ranked;  // (|d|, cell)
      double abs_max = 0;
      for (int64_t k = 0; k < rows * cols; ++k) {
        const double d = static_cast<double>(a[k]) - static_cast<double>(b[k]);
        EXPECT_NEAR(d, c.difference.data[k], 1e-7);
        abs_max = std::max(abs_max, std::fabs(d));
        ranked.push_back({-std::fabs(d), k});
      }
      std::sort(ranked.begin(), ranked.end());
      EXPECT_NEAR(abs_max, c.abs_max, 1e-7);
      ASSERT_EQ(std::min(top, ranked.size()), c.largest.size());
      for (size_t n = 0; n < c.largest.size(); ++n) {
        EXPECT_EQ(ranked[n].second, c.largest[n].row * cols + c.largest[n].col) << n;
      }
    }
}

TEST(QueryFocus, SumAndMeanAgainstReference) {
  const int64_t layers = 2, B = 2, H = 3, L = 5, S = 6;
  Tensor probs({layers, B, H, L, S});
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : probs.data) v = u(rng);
  const MapStack maps = mapStackOf(probs);
  const std::vector<int64_t> queries = {1, 4, 4};
  const Tensor sum = queryFocus(maps, 1, queries, RowCombine::Sum);
  const Tensor mean = queryFocus(maps, 1, queries, RowCombine::Mean);
  ASSERT_EQ((Shape{layers, H, S}), sum.shape);
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < S; ++j) {
        double want = 0;
        for (int64_t i : queries) want += probs.data[((((layer * B) + 1) * H + h) * L + i) * S + j];
        EXPECT_NEAR(want, sum.data[(layer * H + h) * S + j], 1e-6);
        EXPECT_NEAR(want / 3, mean.data[(layer * H + h) * S + j], 1e-6);
      }
  EXPECT_THROW(queryFocus(maps, 2, {0}, RowCombine::Sum), InputError);
  EXPECT_THROW(queryFocus(maps, 0, {5}, RowCombine::Sum), InputError);
  EXPECT_THROW(queryFocus(maps, 0, {}, RowCombine::Mean), InputError);
}

}  // namespace
}  // namespace attnscope
