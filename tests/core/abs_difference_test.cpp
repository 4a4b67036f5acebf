// absDifference: the mistakes lab's |buggy - correct| probabilities. Checked against a
// float64 loop over several shapes, then on real traces: floor division changes the
// probabilities, reshape-without-transpose leaves them exactly equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "attention/attention.h"
#include "config/settings.h"

namespace attnscope {
namespace {

Tensor randomTensor(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Tensor t(shape);
  for (float& v : t.data) v = normal(rng);
  return t;
}

TEST(AbsDifference, MatchesFloat64LoopOverShapes) {
  std::mt19937 rng(7);
  const Shape shapes[] = {{1}, {5}, {3, 7}, {2, 3, 5, 4}, {1, 1, 1, 1}, {2, 1, 9, 13}, {0, 4}};
  for (const Shape& shape : shapes) {
    const Tensor a = randomTensor(shape, rng), b = randomTensor(shape, rng);
    const Tensor d = absDifference(a, b);
    ASSERT_EQ(d.shape, shape) << shapeToString(shape);
    for (size_t n = 0; n < a.data.size(); ++n) {
      const double expected = std::fabs(static_cast<double>(a.data[n]) - static_cast<double>(b.data[n]));
      EXPECT_NEAR(d.data[n], expected, 1e-6 * (1.0 + expected)) << shapeToString(shape) << " at " << n;
    }
    // Symmetric, and zero against itself.
    EXPECT_EQ(absDifference(b, a).data, d.data);
    for (float v : absDifference(a, a).data) EXPECT_EQ(v, 0.0f);
  }
}

TEST(AbsDifference, ExactValuesAndSignedZero) {
  Tensor a({4}), b({4});
  a.data = {-0.0f, 1.0f, -3.5f, 0.25f};
  b.data = {0.0f, -1.0f, 3.5f, 0.25f};
  EXPECT_EQ(absDifference(a, b).data, (std::vector<float>{0.0f, 2.0f, 7.0f, 0.0f}));
}

TEST(AbsDifference, ShapeMismatchNamesBothShapes) {
  try {
    absDifference(Tensor({2, 3}), Tensor({3, 2}));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "absDifference: shapes differ, [2, 3] vs [3, 2]");
  }
}

// The app's comparison: the same inputs run with and without the mistake.
Tensor probsDifference(Mistake mistake, const std::string& mask) {
  Settings s;
  s.heads = 2;
  s.head_dim = 8;
  s.mask = MaskSpec::parse(mask);
  const AttentionInputs inputs = buildInputs(s);
  AttentionOptions options = attentionOptions(s);
  const AttentionTrace correct = runAttention(inputs, options);
  options.mistake = mistake;
  const AttentionTrace buggy = runAttention(inputs, options);
  return absDifference(buggy.probs, correct.probs);
}

TEST(AbsDifference, FloorDivisionChangesProbabilitiesButNotMaskedCells) {
  const Tensor d = probsDifference(Mistake::FloorDivisionScale, "causal");
  ASSERT_EQ(d.shape.size(), 4u);
  const int64_t H = d.dim(1), L = d.dim(2), S = d.dim(3);
  float largest = 0.0f;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) {
        const float v = d.data[(h * L + i) * S + j];
        if (j > i) {
          EXPECT_EQ(v, 0.0f) << "masked cells are 0 in both runs";
        }
        largest = std::max(largest, v);
      }
  EXPECT_GT(largest, 1e-3f);
  EXPECT_LE(largest, 1.0f);
}

TEST(AbsDifference, ReshapeWithoutTransposeLeavesProbabilitiesEqual) {
  const Tensor d = probsDifference(Mistake::ReshapeWithoutTranspose, "none");
  for (float v : d.data) ASSERT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace attnscope
