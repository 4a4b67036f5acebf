// RoPE with given inverse frequencies (AttentionOptions::rope_inv_freq): scaled RoPE and
// GPT-NeoX's partial rotary, checked against rotations worked out in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention/variants.h"

namespace attnscope {
namespace {

TEST(RopeFrequencies, DefaultFrequenciesAreBasePowers) {
  const std::vector<double> f = ropeInvFreq(8, 100.0);
  ASSERT_EQ(f.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(f[i], std::pow(100.0, -2.0 * i / 8.0));
  EXPECT_EQ(ropeInvFreq(8, 100.0, {0.5}), std::vector<double>{0.5});
}

TEST(RopeFrequencies, PartialRotaryTurnsOnlyTheLeadingFeatures) {
  // d = 6, r = 4 rotated features (pairs (0, 2) and (1, 3) rotate-half style), 4 and 5 pass.
  const std::vector<double> inv = {0.7, 0.05};
  for (RopeStyle style : {RopeStyle::RotateHalf, RopeStyle::Interleaved}) {
    Tensor x({1, 1, 3, 6});
    for (size_t n = 0; n < x.data.size(); ++n) x.data[n] = 0.1f * static_cast<float>(n) - 0.7f;
    const Tensor before = x;
    applyRope(x, 10000.0, style, inv);
    for (int t = 0; t < 3; ++t) {
      const float* a = &before.data[t * 6];
      const float* b = &x.data[t * 6];
      for (int i = 0; i < 2; ++i) {
        const int p = style == RopeStyle::RotateHalf ? i : 2 * i, q = style == RopeStyle::RotateHalf ? i + 2 : 2 * i + 1;
        const double c = std::cos(t * inv[i]), s = std::sin(t * inv[i]);
        EXPECT_NEAR(b[p], a[p] * c - a[q] * s, 1e-6);
        EXPECT_NEAR(b[q], a[q] * c + a[p] * s, 1e-6);
      }
      EXPECT_EQ(b[4], a[4]);
      EXPECT_EQ(b[5], a[5]);
      std::vector<float> one(a, a + 6);
      rotateAt(one.data(), 6, t, 10000.0, style, inv);  // the KV cache's path: the same rotation
      for (int c = 0; c < 6; ++c) EXPECT_NEAR(one[c], b[c], 1e-6);
    }
  }
}

}  // namespace
}  // namespace attnscope
