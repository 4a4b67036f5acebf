// Rollout and flow as maps of the view model (core/analysis/layer_maps.h, core/view/map_kinds.h):
// the registry, the built maps against a float64 rollout written here (plain loops of the
// paper's recurrence), ranges, pooled texture copies for long maps, and the sources that
// cannot have them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/layer_maps.h"
#include "analysis/rollout.h"

namespace attnscope {
namespace {

// [layers, B, H, L, S] random distributions (row i of batch item 0 all zero when i == zero_row).
ViewModel importedView(int64_t layers, int64_t B, int64_t H, int64_t L, int64_t S, uint32_t seed,
                       int64_t zero_row = -1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.5);
  ImportedMaps maps;
  maps.maps = Tensor({layers, B, H, L, S});
  for (int64_t m = 0; m < layers * B * H; ++m)
    for (int64_t i = 0; i < L; ++i) {
      if ((m / H) % B == 0 && i == zero_row) continue;
      float* row = maps.maps.data.data() + (m * L + i) * S;
      double sum = 0;
      std::vector<double> e(S);
      for (int64_t j = 0; j < S; ++j) sum += e[j] = std::exp(normal(rng));
      for (int64_t j = 0; j < S; ++j) row[j] = static_cast<float>(e[j] / sum);
    }
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < L; ++i) tokens.push_back("t" + std::to_string(i));
  maps.query_tokens = {tokens};
  if (S != L) maps.key_tokens = {std::vector<std::string>(S, "k")};
  maps.origin = "test";
  return viewFromImported(std::move(maps));
}

// rollout[layer] of batch item b in float64: A_layer ... A_0, A = rownorm(0.5 mean_h + 0.5 I).
std::vector<std::vector<double>> referenceRollout(const ViewModel& view, int64_t last, int64_t b) {
  const int64_t L = view.L;
  std::vector<std::vector<double>> acc(L, std::vector<double>(L, 0.0));
  for (int64_t i = 0; i < L; ++i) acc[i][i] = 1;
  for (int64_t layer = 0; layer <= last; ++layer) {
    std::vector<std::vector<double>> a(L, std::vector<double>(L, 0.0)), next = a;
    for (int64_t i = 0; i < L; ++i) {
      double total = 0;
      for (int64_t j = 0; j < L; ++j) {
        for (int64_t h = 0; h < view.H; ++h) a[i][j] += view.probs(layer, b, h)[i * L + j];
        total += a[i][j] = 0.5 * a[i][j] / static_cast<double>(view.H) + (i == j ? 0.5 : 0.0);
      }
      for (double& v : a[i]) v /= total;
    }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < L; ++k)
        for (int64_t j = 0; j < L; ++j) next[i][j] += a[i][k] * acc[k][j];
    acc = next;
  }
  return acc;
}

TEST(MapKinds, OneRowPerKindNamesRoundTrip) {
  std::set<std::string> names;
  for (const MapKindInfo& info : mapKinds()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(mapKindNames().find(info.name), info.kind);
    EXPECT_STREQ(mapKindName(info.kind), info.name);
    EXPECT_EQ(info.across_layers, info.kind == MapKind::Rollout || info.kind == MapKind::Flow);
  }
  EXPECT_EQ(names, (std::set<std::string>{"probs", "scores", "mask", "rollout", "flow"}));
  EXPECT_FALSE(mapKindNames().find("rolout"));
  EXPECT_EQ(acrossLayersTitle(MapKind::Rollout, "layer 3"), "rollout after layer 3: output position x input token");
}

struct Case {
  int64_t layers, B, H, L;
  int64_t zero_row;
};

TEST(LayerMaps, RolloutAgainstFloat64Reference) {
  // L = 300 > kTextureMaxSide: the textures are pooled copies.
  for (const Case& c : {Case{3, 2, 4, 7, -1}, Case{2, 1, 3, 9, 4}, Case{4, 1, 2, 300, 10}}) {
    SCOPED_TRACE(testing::Message() << c.layers << "x" << c.B << "x" << c.H << "x" << c.L);
    ViewModel view = importedView(c.layers, c.B, c.H, c.L, c.L, 7 + static_cast<uint32_t>(c.L), c.zero_row);
    EXPECT_EQ(acrossLayersUnavailable(view), "");
    EXPECT_EQ(view.acrossLayers(MapKind::Rollout), nullptr);
    addAcrossLayerMaps(view, MapKind::Rollout);
    const AcrossLayerMaps* maps = view.acrossLayers(MapKind::Rollout);
    ASSERT_NE(maps, nullptr);
    EXPECT_EQ(view.acrossLayers(MapKind::Flow), nullptr);
    ASSERT_EQ(maps->values.shape, (Shape{c.layers, c.B, c.L, c.L}));
    for (int64_t layer = 0; layer < c.layers; ++layer)
      for (int64_t b = 0; b < c.B; ++b) {
        const auto want = referenceRollout(view, layer, b);
        const float* got = maps->map(layer, b);
        float max = 0;
        for (int64_t i = 0; i < c.L; ++i)
          for (int64_t j = 0; j < c.L; ++j) {
            ASSERT_NEAR(got[i * c.L + j], want[i][j], 2e-6) << layer << " " << b << " " << i << " " << j;
            max = std::max(max, got[i * c.L + j]);
          }
        const MapRange& range = maps->ranges[static_cast<size_t>(layer * c.B + b)];
        EXPECT_EQ(range.max, max);
        EXPECT_EQ(range.allowed_cells, c.L * c.L);
        const PooledMap texture = view.textureMap(MapKind::Rollout, layer, b, 0);
        EXPECT_EQ(texture.rows, std::min(c.L, kTextureMaxSide));
        EXPECT_EQ(texture.cols, std::min(c.L, kTextureMaxSide));
        if (c.L <= kTextureMaxSide) {
          EXPECT_EQ(texture.values, std::vector<float>(got, got + c.L * c.L));
        }
        // Max pooling keeps every peak: the texture's largest value is the map's.
        EXPECT_EQ(*std::max_element(texture.values.begin(), texture.values.end()), max);
      }
    addAcrossLayerMaps(view, MapKind::Rollout);  // already built: kept as it is
    EXPECT_EQ(view.across_layers.size(), 1u);
  }
}

TEST(LayerMaps, FlowIsTheAnalysisFlowAndCancels) {
  ViewModel view = importedView(3, 2, 2, 6, 6, 11);
  const Tensor want = attentionFlow(mapStackOf(view));
  ViewModel cancelled = view;
  EXPECT_THROW(addAcrossLayerMaps(cancelled, MapKind::Flow, [](double) { return false; }), Cancelled);
  EXPECT_EQ(cancelled.acrossLayers(MapKind::Flow), nullptr);
  double last = 0;
  addAcrossLayerMaps(view, MapKind::Flow, [&](double f) {
    EXPECT_GE(f, last);
    last = f;
    return true;
  });
  EXPECT_EQ(last, 1.0);
  ASSERT_NE(view.acrossLayers(MapKind::Flow), nullptr);
  EXPECT_EQ(view.acrossLayers(MapKind::Flow)->values.data, want.data);
}

TEST(LayerMaps, SourcesWithoutThemSayWhy) {
  ViewModel one = importedView(1, 1, 2, 5, 5, 3);
  EXPECT_EQ(acrossLayersUnavailable(one), "rollout and flow combine several layers; this source has 1 layer");
  ViewModel cross = importedView(2, 1, 2, 4, 6, 3);
  EXPECT_EQ(acrossLayersUnavailable(cross), "rollout and flow need self-attention (L = S); these maps are L = 4 x S = 6");
  for (MapKind kind : {MapKind::Rollout, MapKind::Flow}) {
    EXPECT_THROW(addAcrossLayerMaps(one, kind), InputError);
    EXPECT_THROW(addAcrossLayerMaps(cross, kind), InputError);
    EXPECT_THROW(one.textureMap(kind, 0, 0, 0), std::logic_error);
  }
  EXPECT_THROW(addAcrossLayerMaps(one, MapKind::Probs), std::logic_error);
}

}  // namespace
}  // namespace attnscope
