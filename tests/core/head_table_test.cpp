// The app's head table (core/analysis/head_table.h): rows and groups as analyze computes
// them, and the order of every sortable column (ascending and descending) against a
// reference order written here (a plain sort of (key, head index) pairs, NaN last).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "analysis/head_table.h"
#include "view/view_model.h"

namespace attnscope {
namespace {

// Random causal softmax maps [layers, B, H, L, L]; tokens repeat so induction is defined.
ViewModel randomView(int64_t layers, int64_t B, int64_t H, int64_t L, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  ImportedMaps maps;
  maps.maps = Tensor({layers, B, H, L, L});
  float* p = maps.maps.data.data();
  for (int64_t m = 0; m < layers * B * H; ++m)
    for (int64_t i = 0; i < L; ++i) {
      float* row = p + (m * L + i) * L;
      double sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(normal(rng));
      for (int64_t j = 0; j <= i; ++j) row[j] = static_cast<float>(row[j] / sum);
    }
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < L; ++i) tokens.push_back("t" + std::to_string(i % 3));
  maps.query_tokens = {tokens};
  maps.origin = "test";
  return viewFromImported(std::move(maps));
}

std::vector<int64_t> referenceOrder(const HeadTable& t, int64_t b, HeadSort sort) {
  std::vector<std::pair<double, int64_t>> keyed;
  for (int64_t n = 0; n < t.layers * t.H; ++n) {
    double key = static_cast<double>(n);
    if (sort.column == kGroupColumn) key = static_cast<double>(t.group(n, b));
    if (sort.column >= kFirstMetricColumn)
      key = t.row(n / t.H, n % t.H, b).*headMetricInfos()[sort.column - kFirstMetricColumn].field;
    keyed.push_back({key, n});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (std::isnan(x.first) || std::isnan(y.first)) return !std::isnan(x.first) && std::isnan(y.first);
    return sort.descending ? x.first > y.first : x.first < y.first;
  });
  std::vector<int64_t> order;
  for (const auto& k : keyed) order.push_back(k.second);
  return order;
}

struct Shape {
  int64_t layers, B, H, L;
};

TEST(HeadTable, RowsGroupsAndEveryColumnOrder) {
  for (const Shape& s : {Shape{1, 1, 4, 6}, Shape{3, 2, 4, 7}, Shape{2, 3, 1, 5}, Shape{1, 2, 8, 9}}) {
    const ViewModel view = randomView(s.layers, s.B, s.H, s.L, static_cast<unsigned>(s.layers * 100 + s.H));
    const HeadTable table = headTableOf(view);
    const MapStack maps = mapStackOf(view);
    const std::vector<HeadMetrics> rows = headMetrics(maps);
    ASSERT_EQ(table.source, &view);
    ASSERT_EQ(table.metrics.size(), rows.size());
    ASSERT_EQ(static_cast<int64_t>(table.clusters.size()), s.B);
    for (int64_t l = 0; l < s.layers; ++l)
      for (int64_t h = 0; h < s.H; ++h)
        for (int64_t b = 0; b < s.B; ++b) {
          const HeadMetrics& m = table.row(l, h, b);
          EXPECT_EQ(m.layer, l);
          EXPECT_EQ(m.head, h);
          EXPECT_EQ(m.batch, b);
        }
    for (int64_t b = 0; b < s.B; ++b) {
      EXPECT_EQ(table.clusters[b].group, clusterHeads(maps, b, 0.5).group);
      const int columns = kFirstMetricColumn + static_cast<int>(headMetricInfos().size());
      for (int column = 0; column < columns; ++column)
        for (bool descending : {false, true}) {
          const HeadSort sort{column, descending};
          EXPECT_EQ(headOrder(table, b, sort), referenceOrder(table, b, sort))
              << "layers " << s.layers << " H " << s.H << " b " << b << " column " << column << " desc " << descending;
        }
    }
  }
}

TEST(HeadTable, SortingByAMetricPutsTheLargestFirst) {
  const ViewModel view = randomView(2, 1, 4, 8, 7);
  const HeadTable table = headTableOf(view);
  const int entropy = kFirstMetricColumn;  // headMetricInfos()[0] is entropy_bits
  ASSERT_STREQ(headMetricInfos()[0].name, "entropy_bits");
  const std::vector<int64_t> order = headOrder(table, 0, {entropy, true});
  for (size_t k = 1; k < order.size(); ++k)
    EXPECT_GE(table.row(order[k - 1] / 4, order[k - 1] % 4, 0).entropy_bits,
              table.row(order[k] / 4, order[k] % 4, 0).entropy_bits);
}

}  // namespace
}  // namespace attnscope
