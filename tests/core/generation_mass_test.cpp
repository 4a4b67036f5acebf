// Over a generation (core/analysis/generation_mass.h): each generated row's mass on the
// first token and on the last W tokens, and the head table's means of both, against a
// float64 reference written here; table-driven over shapes, windows and prompt lengths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "analysis/generation_mass.h"
#include "analysis/head_table.h"
#include "view/view_model.h"

namespace attnscope {
namespace {

// Random causal softmax maps [layers, B, H, L, L] (kept in float64 for the reference), of
// which rows from first_generated on are a generation's.
struct Maps {
  ViewModel view;
  std::vector<double> p;  // [layers, B, H, L, L]
};

Maps randomGeneration(int64_t layers, int64_t B, int64_t H, int64_t L, int64_t first_generated, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 2.0);
  Maps out;
  out.p.assign(static_cast<size_t>(layers * B * H * L * L), 0.0);
  ImportedMaps maps;
  maps.maps = Tensor({layers, B, H, L, L});
  for (int64_t m = 0; m < layers * B * H; ++m)
    for (int64_t i = 0; i < L; ++i) {
      double* row = &out.p[static_cast<size_t>((m * L + i) * L)];
      double sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(normal(rng));
      for (int64_t j = 0; j <= i; ++j) {
        maps.maps.data[static_cast<size_t>((m * L + i) * L + j)] = static_cast<float>(row[j] / sum);
        row[j] = maps.maps.data[static_cast<size_t>((m * L + i) * L + j)];  // what the view holds, in float64
      }
    }
  maps.origin = "test";
  maps.first_generated = first_generated;
  out.view = viewFromImported(std::move(maps));
  return out;
}

struct Case {
  int64_t layers, B, H, L, first, window;
};
constexpr Case kCases[] = {
    {1, 1, 1, 5, 2, 1}, {2, 1, 4, 12, 4, 8}, {2, 2, 3, 20, 10, 3}, {3, 1, 2, 9, 0, 16}, {1, 1, 2, 16, 15, 4},
};
constexpr double kTolerance = 1e-6;  // float32 sums of at most 16 terms

TEST(GenerationMass, RowsAndMeansMatchAFloat64Reference) {
  unsigned seed = 1;
  for (const Case& c : kCases) {
    SCOPED_TRACE("L=" + std::to_string(c.L) + " first=" + std::to_string(c.first) + " W=" + std::to_string(c.window));
    const Maps maps = randomGeneration(c.layers, c.B, c.H, c.L, c.first, seed++);
    const GenerationMass m = generationMass(maps.view, c.window);
    ASSERT_EQ(m.steps, c.L - c.first);
    ASSERT_EQ(m.first, c.first);
    const HeadTable table = headTableOf(maps.view, 0.5, c.window);
    for (int64_t layer = 0; layer < c.layers; ++layer)
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.H; ++h) {
          const double* map = &maps.p[static_cast<size_t>(((layer * c.B + b) * c.H + h) * c.L * c.L)];
          double sink_mean = 0, recent_mean = 0;
          for (int64_t t = c.first; t < c.L; ++t) {
            double recent = 0;
            for (int64_t j = 0; j <= t; ++j)
              if (t - j < c.window) recent += map[t * c.L + j];
            EXPECT_NEAR(m.sinkSeries(layer, b, h)[t - c.first], map[t * c.L], kTolerance);
            EXPECT_NEAR(m.recentSeries(layer, b, h)[t - c.first], recent, kTolerance);
            sink_mean += map[t * c.L] / static_cast<double>(m.steps);
            recent_mean += recent / static_cast<double>(m.steps);
          }
          // The plots' scales: the series' own extremes, mean and last value (float64).
          for (const auto& [scale, series] : {std::pair{m.sinkScale(layer, b, h), m.sinkSeries(layer, b, h)},
                                              std::pair{m.recentScale(layer, b, h), m.recentSeries(layer, b, h)}}) {
            const double lo = *std::min_element(series, series + m.steps), hi = *std::max_element(series, series + m.steps);
            double mean = 0;
            for (int64_t s = 0; s < m.steps; ++s) mean += series[s] / static_cast<double>(m.steps);
            EXPECT_EQ(scale.min, lo);
            EXPECT_EQ(scale.max, hi);
            EXPECT_EQ(scale.last, series[m.steps - 1]);
            EXPECT_NEAR(scale.mean, mean, kTolerance);
            EXPECT_LE(scale.lo, lo);
            EXPECT_GE(scale.hi, hi);
          }
          const HeadMetrics& row = table.row(layer, h, b);
          EXPECT_NEAR(row.gen_sink_mass, sink_mean, kTolerance);
          EXPECT_NEAR(row.gen_recent_mass, recent_mean, kTolerance);
        }
  }
}

// A plot's range is the series' own (so 0.0178-0.0223 is not a flat line at the foot of
// 0..1), at least kMinPlotSpan wide around its middle and within [0, 1].
TEST(GenerationMass, PlotScaleIsTheSeriesOwnRange) {
  const float narrow[] = {0.0178f, 0.0223f, 0.02f};
  SeriesScale s = seriesScale(narrow, 3);
  EXPECT_NEAR(s.lo, (0.0178 + 0.0223) / 2 - 0.005, 1e-7);
  EXPECT_NEAR(s.hi, (0.0178 + 0.0223) / 2 + 0.005, 1e-7);
  EXPECT_NEAR(s.mean, (0.0178 + 0.0223 + 0.02) / 3, 1e-7);
  EXPECT_EQ(s.last, 0.02f);
  const float wide[] = {0.2f, 0.9f};
  s = seriesScale(wide, 2);
  EXPECT_EQ(s.lo, 0.2f);
  EXPECT_EQ(s.hi, 0.9f);
  const float near_one[] = {0.999f, 1.0f};  // widened downwards: never above 1
  s = seriesScale(near_one, 2);
  EXPECT_EQ(s.hi, 1.0f);
  EXPECT_NEAR(s.lo, 0.99, 1e-6);
  const float near_zero[] = {0.0f, 0.001f};  // widened upwards: never below 0
  s = seriesScale(near_zero, 2);
  EXPECT_EQ(s.lo, 0.0f);
  EXPECT_NEAR(s.hi, 0.01, 1e-6);
}

TEST(GenerationMass, NoGenerationLeavesTheColumnsEmpty) {
  Maps maps = randomGeneration(1, 1, 2, 6, 3, 7);
  maps.view.first_generated = -1;
  EXPECT_EQ(generationMass(maps.view, 8).steps, 0);
  const HeadTable table = headTableOf(maps.view);
  EXPECT_TRUE(std::isnan(table.row(0, 0, 0).gen_sink_mass));
  EXPECT_TRUE(std::isnan(table.row(0, 1, 0).gen_recent_mass));
}

}  // namespace
}  // namespace attnscope
