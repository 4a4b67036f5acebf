// The induction probe (model/induction_probe.h) and TransformerLens' induction score on it
// (analysis/head_metrics.h): the stripe diagonal(offset = 1 - N) against a float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analysis/head_metrics.h"
#include "analysis/map_stack.h"
#include "config/model_source.h"
#include "model/induction_probe.h"
#include "model/model.h"

namespace attnscope {
namespace {

// Random causal rows [L, L] summing to 1.
Tensor randomCausalMaps(int64_t H, int64_t L, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  Tensor probs({1, H, L, L});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      float* row = probs.data.data() + (h * L + i) * L;
      double sum = 0.0;
      for (int64_t j = 0; j <= i; ++j) sum += row[j] = u(rng);
      for (int64_t j = 0; j <= i; ++j) row[j] = static_cast<float>(row[j] / sum);
    }
  return probs;
}

// The reference: pattern.diagonal(offset = 1 - N).mean() in float64, written out.
double stripeReference(const float* map, int64_t L, int64_t N) {
  double sum = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j)
      if (i - j == N - 1) sum += static_cast<double>(map[i * L + j]), ++count;
  return sum / static_cast<double>(count);
}

TEST(InductionProbe, StripeScoreMatchesTheFloat64Reference) {
  for (const int64_t N : {2, 7, 50}) {
    const int64_t L = 2 * N + 1, H = 3;
    const Tensor probs = randomCausalMaps(H, L, static_cast<uint32_t>(N));
    std::vector<std::string> tokens{"<bos>"};
    for (int copy = 0; copy < 2; ++copy)
      for (int64_t k = 0; k < N; ++k) tokens.push_back("t" + std::to_string(k * 7 % 11) + "_" + std::to_string(k));
    ASSERT_EQ(probeLength(tokens), N);
    const std::vector<HeadMetrics> rows = headMetrics(mapStackOf(probs, {}, {tokens}));
    for (int64_t h = 0; h < H; ++h) {
      const float* map = probs.data.data() + h * L * L;
      const double want = stripeReference(map, L, N);
      EXPECT_NEAR(inductionStripeScore(map, L, L, N), want, 1e-12) << "N " << N << " head " << h;
      EXPECT_NEAR(rows[h].induction, want, 1e-9) << "the table's column, N " << N << " head " << h;
    }
  }
}

TEST(InductionProbe, OnlyTheProbeShapeReadsTheStripe) {
  EXPECT_EQ(probeLength({"B", "x", "y", "x", "y"}), 2);
  EXPECT_EQ(probeLength({"x", "y", "x", "y"}), 0);            // even: no first token
  EXPECT_EQ(probeLength({"B", "x", "y", "x", "z"}), 0);       // the halves differ
  EXPECT_EQ(probeLength({"B", "x", "x"}), 0);                 // N = 1 is no probe
  // A text that is no probe keeps the repeated segment's keys.
  const std::vector<std::string> text{"a", "b", "c", "a", "b", "c"};
  EXPECT_EQ(inductionKeysOf(text, 6, 6), inductionKeys(findRepeatedSegment(text), 6, 6));
  EXPECT_EQ(inductionKeysOf({"B", "x", "y", "x", "y"}, 5, 5), (std::vector<int64_t>{-1, 0, 1, 2, 3}));
}

TEST(InductionProbe, RepeatedRandomTokensOnAShippedModel) {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  ASSERT_NE(it, shipped.end());
  const Model model = loadModel(it->folder);
  const InductionProbe probe = repeatedRandomTokens(model, 50, 7);
  ASSERT_EQ(probe.ids.size(), 101u);
  EXPECT_EQ(probe.n, 50);
  EXPECT_TRUE(std::equal(probe.ids.begin() + 1, probe.ids.begin() + 51, probe.ids.begin() + 51));
  const ModelTokens typed = tokenizeForModel(model, probe.text);
  EXPECT_EQ(typed.ids, probe.ids);  // the text box's text gives back exactly the probe
  EXPECT_EQ(probeLength(typed.label), 50);
  EXPECT_EQ(repeatedRandomTokens(model, 50, 7).text, probe.text);  // seeded
  EXPECT_NE(repeatedRandomTokens(model, 50, 8).text, probe.text);
  std::vector<int64_t> distinct(probe.ids.begin() + 1, probe.ids.begin() + 51);
  std::sort(distinct.begin(), distinct.end());
  EXPECT_GT(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), 20);  // random, not one token
  EXPECT_THROW(repeatedRandomTokens(model, 0, 1), InputError);
  EXPECT_THROW(repeatedRandomTokens(model, model.config.max_positions, 1), InputError);  // 2N + 1 past the context
}

}  // namespace
}  // namespace attnscope
