// Attention rollout and flow (core/analysis/rollout.h) and head clustering
// (core/analysis/head_clusters.h): hand-computed cases, then a float64 reference written
// here (plain matrix loops for rollout, an Edmonds-Karp max-flow on a dense matrix for
// flow, a two-pass Pearson for the correlations) on random maps with masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "analysis/head_clusters.h"
#include "analysis/rollout.h"

namespace attnscope {
namespace {

using Mat = std::vector<std::vector<double>>;

// Random probability maps [layers, B, H, L, L]; causal when asked, and row `masked_row`
// (if >= 0) of batch item 0 all zero in every map, as a fully masked row.
Tensor randomMaps(int64_t layers, int64_t B, int64_t H, int64_t L, bool causal, int64_t masked_row, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.5);
  Tensor probs({layers, B, H, L, L});
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          float* row = probs.data.data() + (((layer * B + b) * H + h) * L + i) * L;
          if (b == 0 && i == masked_row) continue;
          std::vector<double> e(L, 0.0);
          double total = 0;
          for (int64_t j = 0; j < L; ++j)
            if (!causal || j <= i) total += e[j] = std::exp(normal(rng));
          for (int64_t j = 0; j < L; ++j) row[j] = static_cast<float>(e[j] / total);
        }
  return probs;
}

// The paper's residual matrix, in plain loops: rownorm(0.5 mean_h + 0.5 I).
Mat referenceResidual(const Tensor& probs, int64_t layer, int64_t b) {
  const int64_t B = probs.shape[1], H = probs.shape[2], L = probs.shape[3];
  Mat a(L, std::vector<double>(L, 0.0));
  for (int64_t i = 0; i < L; ++i) {
    double total = 0;
    for (int64_t j = 0; j < L; ++j) {
      double mean = 0;
      for (int64_t h = 0; h < H; ++h) mean += probs.data[(((layer * B + b) * H + h) * L + i) * L + j];
      a[i][j] = 0.5 * mean / H + (i == j ? 0.5 : 0.0);
      total += a[i][j];
    }
    for (double& v : a[i]) v /= total;
  }
  return a;
}

// Edmonds-Karp on a dense capacity matrix (BFS shortest augmenting paths).
double referenceMaxFlow(Mat cap, int64_t s, int64_t t) {
  const int64_t n = static_cast<int64_t>(cap.size());
  double total = 0;
  while (true) {
    std::vector<int64_t> parent(n, -1);
    parent[s] = s;
    std::queue<int64_t> q;
    q.push(s);
    while (!q.empty() && parent[t] < 0) {
      const int64_t u = q.front();
      q.pop();
      for (int64_t v = 0; v < n; ++v)
        if (parent[v] < 0 && cap[u][v] > 1e-13) {
          parent[v] = u;
          q.push(v);
        }
    }
    if (parent[t] < 0) return total;
    double bottleneck = 1e300;
    for (int64_t v = t; v != s; v = parent[v]) bottleneck = std::min(bottleneck, cap[parent[v]][v]);
    for (int64_t v = t; v != s; v = parent[v]) {
      cap[parent[v]][v] -= bottleneck;
      cap[v][parent[v]] += bottleneck;
    }
    total += bottleneck;
  }
}

float at(const Tensor& t, int64_t layer, int64_t b, int64_t i, int64_t j) {
  const int64_t B = t.shape[1], L = t.shape[2];
  return t.data[((layer * B + b) * L + i) * L + j];
}

TEST(Rollout, HandComputedTwoLayers) {
  // One head, L = 2. Layer 0: [[1, 0], [1, 0]] -> A0 = [[1, 0], [0.5, 0.5]].
  // Layer 1: [[0, 1], [0, 1]] -> A1 = [[0.5, 0.5], [0, 1]]. Rollout1 = A1 A0 = [[0.75, 0.25], [0.5, 0.5]].
  Tensor probs({2, 1, 1, 2, 2});
  probs.data = {1, 0, 1, 0, 0, 1, 0, 1};
  const Tensor r = attentionRollout(mapStackOf(probs));
  const std::vector<float> expected = {1, 0, 0.5f, 0.5f, 0.75f, 0.25f, 0.5f, 0.5f};
  ASSERT_EQ(r.shape, (Shape{2, 1, 2, 2}));
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(expected[k], r.data[k], 1e-7) << k;

  // Flow after layer 1: from output 0 (edges 0.5 to both) through A0 (node 0 -> 0 cap 1,
  // node 1 -> 0 0.5, 1 -> 1 0.5) to input 0: 0.5 + 0.5 = 1; to input 1: min(0.5, 0.5) = 0.5.
  // Normalised: [2/3, 1/3]. From output 1 (edge 1 to node 1): to 0: 0.5, to 1: 0.5 -> [0.5, 0.5].
  const Tensor f = attentionFlow(mapStackOf(probs));
  const std::vector<float> flow = {1, 0, 0.5f, 0.5f, 2 / 3.f, 1 / 3.f, 0.5f, 0.5f};
  for (size_t k = 0; k < flow.size(); ++k) EXPECT_NEAR(flow[k], f.data[k], 1e-7) << k;
}

TEST(MaxFlow, ClassicNetworks) {
  // CLRS figure 26.1: max flow 23 from node 0 to node 5.
  const int64_t n = 6;
  std::vector<double> cap(n * n, 0.0);
  auto edge = [&](int64_t u, int64_t v, double c) { cap[u * n + v] = c; };
  edge(0, 1, 16); edge(0, 2, 13); edge(1, 3, 12); edge(2, 1, 4); edge(2, 4, 14);
  edge(3, 2, 9); edge(3, 5, 20); edge(4, 3, 7); edge(4, 5, 4);
  EXPECT_NEAR(23.0, maxFlow(cap, n, 0, 5), 1e-12);
  EXPECT_NEAR(0.0, maxFlow(cap, n, 5, 0), 1e-12);  // no path back
  // Random dense graphs against the Edmonds-Karp reference.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t m = 3 + trial % 6;
    Mat dense(m, std::vector<double>(m, 0.0));
    std::vector<double> flat(m * m, 0.0);
    for (int64_t a = 0; a < m; ++a)
      for (int64_t b = 0; b < m; ++b)
        if (a != b && u01(rng) < 0.6) dense[a][b] = flat[a * m + b] = u01(rng);
    EXPECT_NEAR(referenceMaxFlow(dense, 0, m - 1), maxFlow(flat, m, 0, m - 1), 1e-10) << "trial " << trial;
  }
}

struct RolloutCase {
  const char* name;
  int64_t layers, B, H, L;
  bool causal;
  int64_t masked_row;
};

const RolloutCase kCases[] = {
    {"one_layer", 1, 1, 1, 3, false, -1},
    {"three_layers", 3, 1, 2, 5, false, -1},
    {"three_layers_causal_b2", 3, 2, 3, 6, true, -1},
    {"masked_row", 3, 2, 2, 5, true, 2},
    {"four_layers_l8", 4, 1, 4, 8, false, 0},
};

TEST(Rollout, AgainstFloat64Reference) {
  for (const RolloutCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const Tensor probs = randomMaps(c.layers, c.B, c.H, c.L, c.causal, c.masked_row, 11);
    const Tensor residual = residualAttention(mapStackOf(probs));
    const Tensor rollout = attentionRollout(mapStackOf(probs));
    ASSERT_EQ(rollout.shape, (Shape{c.layers, c.B, c.L, c.L}));
    for (int64_t b = 0; b < c.B; ++b) {
      Mat acc;
      for (int64_t layer = 0; layer < c.layers; ++layer) {
        const Mat a = referenceResidual(probs, layer, b);
        if (layer == 0) {
          acc = a;
        } else {
          Mat next(c.L, std::vector<double>(c.L, 0.0));
          for (int64_t i = 0; i < c.L; ++i)
            for (int64_t j = 0; j < c.L; ++j)
              for (int64_t k = 0; k < c.L; ++k) next[i][j] += a[i][k] * acc[k][j];
          acc = next;
        }
        for (int64_t i = 0; i < c.L; ++i) {
          double row_sum = 0;
          for (int64_t j = 0; j < c.L; ++j) {
            EXPECT_NEAR(a[i][j], at(residual, layer, b, i, j), 1e-6);
            EXPECT_NEAR(acc[i][j], at(rollout, layer, b, i, j), 1e-6) << layer << " " << i << " " << j;
            row_sum += at(rollout, layer, b, i, j);
          }
          EXPECT_NEAR(1.0, row_sum, 1e-5);
        }
      }
    }
  }
}

TEST(Flow, AgainstEdmondsKarpReference) {
  for (const RolloutCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const Tensor probs = randomMaps(c.layers, c.B, c.H, c.L, c.causal, c.masked_row, 5);
    std::vector<double> fractions;
    const Tensor flow = attentionFlow(mapStackOf(probs), [&](double f) {
      fractions.push_back(f);
      return true;
    });
    ASSERT_EQ(flow.shape, (Shape{c.layers, c.B, c.L, c.L}));
    ASSERT_FALSE(fractions.empty());
    EXPECT_DOUBLE_EQ(1.0, fractions.back());
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    for (int64_t b = 0; b < c.B; ++b) {
      std::vector<Mat> a;
      for (int64_t layer = 0; layer < c.layers; ++layer) a.push_back(referenceResidual(probs, layer, b));
      for (int64_t layer = 0; layer < c.layers; ++layer) {
        // Dense graph of layers 0..layer + 1; node (k, p) = k * L + p.
        const int64_t n = (layer + 2) * c.L;
        Mat cap(n, std::vector<double>(n, 0.0));
        for (int64_t k = 0; k <= layer; ++k)
          for (int64_t p = 0; p < c.L; ++p)
            for (int64_t q = 0; q < c.L; ++q) cap[(k + 1) * c.L + p][k * c.L + q] = a[k][p][q];
        for (int64_t i = 0; i < c.L; ++i) {
          std::vector<double> row(c.L);
          double total = 0;
          for (int64_t j = 0; j < c.L; ++j) total += row[j] = referenceMaxFlow(cap, (layer + 1) * c.L + i, j);
          for (int64_t j = 0; j < c.L; ++j)
            EXPECT_NEAR(row[j] / total, at(flow, layer, b, i, j), 1e-6) << layer << " " << i << " " << j;
        }
        if (layer == 0) {  // one layer: the flow is A_0 itself
          for (int64_t i = 0; i < c.L; ++i)
            for (int64_t j = 0; j < c.L; ++j) EXPECT_NEAR(a[0][i][j], at(flow, 0, b, i, j), 1e-6);
        }
      }
    }
  }
}

TEST(Flow, CancelAndErrors) {
  const Tensor probs = randomMaps(3, 1, 2, 6, false, -1, 1);
  EXPECT_THROW(attentionFlow(mapStackOf(probs), [](double) { return false; }), Cancelled);
  const Tensor cross({2, 1, 1, 3, 4});
  EXPECT_THROW(attentionRollout(mapStackOf(cross)), InputError);
  EXPECT_THROW(attentionFlow(mapStackOf(cross)), InputError);
  EXPECT_THROW(residualAttention(mapStackOf(cross)), InputError);
}

// ---------------------------------------------------------------- clustering

TEST(Pearson, HandCases) {
  EXPECT_NEAR(1.0, pearson({1, 2, 3}, {2, 4, 6}), 1e-12);
  EXPECT_NEAR(-1.0, pearson({1, 2, 3}, {3, 2, 1}), 1e-12);
  EXPECT_NEAR(0.0, pearson({1, 0, -1, 0}, {0, 1, 0, -1}), 1e-12);
  EXPECT_EQ(1.0, pearson({0.5, 0.5}, {0.5, 0.5}));  // two equal constants
  EXPECT_EQ(0.0, pearson({0.5, 0.5}, {0.25, 0.25}));
  EXPECT_EQ(0.0, pearson({0.5, 0.5}, {0.25, 0.75}));
}

TEST(Clusters, TwoObviousGroups) {
  // 2 layers x 2 heads, L = 3: heads (0,0) and (1,0) put everything on the sink, (0,1) and
  // (1,1) on the diagonal (with a little noise): groups {0, 2} and {1, 3}.
  Tensor probs({2, 1, 2, 3, 3});
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 3; ++i) {
        float* row = probs.data.data() + ((layer * 2 + h) * 3 + i) * 3;
        const int64_t target = h == 0 ? 0 : i;
        for (int64_t j = 0; j < 3; ++j) row[j] = j == target ? 0.9f - 0.05f * layer : 0.05f + 0.025f * layer;
      }
  const HeadClusters c = clusterHeads(mapStackOf(probs));
  EXPECT_EQ(2, c.count);
  EXPECT_EQ((std::vector<int64_t>{0, 1, 0, 1}), c.group);
  EXPECT_EQ((std::vector<int64_t>{0, 2, 1, 3}), c.order);
  EXPECT_NEAR(1.0, c.correlation[0 * 4 + 2], 1e-9);
  // A threshold above every correlation keeps every head alone.
  const HeadClusters alone = clusterHeads(mapStackOf(probs), 0, 1.5);
  EXPECT_EQ(4, alone.count);
  EXPECT_EQ((std::vector<int64_t>{0, 1, 2, 3}), alone.order);
  EXPECT_THROW(clusterHeads(mapStackOf(probs), 1), InputError);
}

// Correlations against a two-pass reference; L > 64 exercises the block-mean pooling.
TEST(Clusters, CorrelationAgainstFloat64Reference) {
  struct Case {
    int64_t layers, B, H, L;
    int64_t batch;
  };
  for (const Case& c : {Case{2, 2, 3, 6, -1}, Case{1, 3, 4, 9, 1}, Case{2, 1, 2, 70, 0}}) {
    SCOPED_TRACE("L=" + std::to_string(c.L));
    const Tensor probs = randomMaps(c.layers, c.B, c.H, c.L, true, -1, 9);
    const HeadClusters clusters = clusterHeads(mapStackOf(probs), c.batch, 0.3);
    const int64_t N = c.layers * c.H, side = std::min<int64_t>(c.L, 64);
    std::vector<std::vector<double>> v(N);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < c.B; ++b) {
        if (c.batch >= 0 && b != c.batch) continue;
        const float* map = probs.data.data() + (((n / c.H) * c.B + b) * c.H + n % c.H) * c.L * c.L;
        // Pooled cell (r, s) = mean of the cells whose block index floor(i * side / L) is r.
        std::vector<double> sum(side * side, 0.0), count(side * side, 0.0);
        for (int64_t i = 0; i < c.L; ++i)
          for (int64_t j = 0; j < c.L; ++j) {
            int64_t r = 0, s = 0;
            while ((r + 1) * c.L / side <= i) ++r;
            while ((s + 1) * c.L / side <= j) ++s;
            sum[r * side + s] += map[i * c.L + j];
            count[r * side + s] += 1;
          }
        for (int64_t k = 0; k < side * side; ++k) v[n].push_back(sum[k] / count[k]);
      }
    for (int64_t a = 0; a < N; ++a)
      for (int64_t b = 0; b < N; ++b) {
        const size_t len = v[a].size();
        double ma = 0, mb = 0;
        for (size_t k = 0; k < len; ++k) ma += v[a][k] / len, mb += v[b][k] / len;
        double ab = 0, aa = 0, bb = 0;
        for (size_t k = 0; k < len; ++k) {
          ab += (v[a][k] - ma) * (v[b][k] - mb);
          aa += (v[a][k] - ma) * (v[a][k] - ma);
          bb += (v[b][k] - mb) * (v[b][k] - mb);
        }
        EXPECT_NEAR(ab / std::sqrt(aa * bb), clusters.correlation[a * N + b], 1e-9) << a << " " << b;
      }
    // Every head sits in exactly one group, and order lists each once.
    std::vector<int64_t> sorted = clusters.order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t n = 0; n < N; ++n) EXPECT_EQ(n, sorted[n]);
  }
}

}  // namespace
}  // namespace attnscope
