// The vectorised MLP activations (model/activations.h) against float64 formulas written
// here: every kind, lengths that leave a tail after the full vectors, values from deep
// negative (SiLU's exp overflow side) to large positive, gated and plain.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/activations.h"

namespace attnscope {
namespace {

double reference(Activation kind, double x) {
  switch (kind) {
    case Activation::GeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::Silu: return x / (1.0 + std::exp(-x));
  }
  return x;
}

struct ActCase {
  const char* name;
  Activation kind;
  int64_t n;
  float spread;
};

class Activations : public ::testing::TestWithParam<ActCase> {};

TEST_P(Activations, MatchFloat64Reference) {
  const ActCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.n));
  std::normal_distribution<float> normal(0.0f, c.spread);
  std::vector<float> x(c.n), gate(c.n);
  for (float& v : x) v = normal(rng);
  for (float& v : gate) v = normal(rng);
  if (c.n > 4) x[0] = -90.0f, x[1] = 90.0f, x[2] = 0.0f, x[3] = -1e-30f;  // saturation and zero
  std::vector<float> plain = x, gated = x;
  activateAll(c.kind, plain.data(), c.n);
  gateAll(c.kind, gate.data(), gated.data(), c.n);
  for (int64_t j = 0; j < c.n; ++j) {
    const double want = reference(c.kind, x[j]), want_gated = x[j] * reference(c.kind, gate[j]);
    ASSERT_NEAR(plain[j], want, 2e-6 + 4e-6 * std::abs(want)) << "x=" << x[j];
    ASSERT_NEAR(gated[j], want_gated, 2e-6 + 4e-6 * std::abs(want_gated)) << "x=" << x[j] << " gate=" << gate[j];
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, Activations,
                         ::testing::Values(ActCase{"gelu_tanh_tail", Activation::GeluTanh, 1037, 3.0f},
                                           ActCase{"gelu_tanh_short", Activation::GeluTanh, 3, 1.0f},
                                           ActCase{"gelu_erf", Activation::GeluErf, 515, 3.0f},
                                           ActCase{"silu_tail", Activation::Silu, 1029, 4.0f},
                                           ActCase{"silu_wide", Activation::Silu, 4096, 20.0f}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnscope
