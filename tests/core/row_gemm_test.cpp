// The row GEMM (attention/row_gemm.h) and combineRows, table-driven against float64
// references: every shape class (one row, tile edges, 128-row passes, 1024-wide k chunks with
// tails), float32 and bfloat16 weights, bias, strides; and the property the runners rely on:
// a row's bits do not depend on the rows (or threads) sharing the call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/row_gemm.h"
#include "tensor/weights.h"

namespace attnscope {
namespace {

struct GemmCase {
  int64_t M, N, K;
  bool bf16, bias;
};

std::string caseName(const testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  return "M" + std::to_string(c.M) + "_N" + std::to_string(c.N) + "_K" + std::to_string(c.K) + (c.bf16 ? "_bf16" : "_f32") +
         (c.bias ? "_bias" : "");
}

uint16_t upperBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

class RowGemm : public testing::TestWithParam<GemmCase> {
 protected:
  void SetUp() override {
    const GemmCase& c = GetParam();
    std::mt19937 rng(static_cast<unsigned>(c.M * 131 + c.N * 7 + c.K));
    std::normal_distribution<float> normal;
    x_.resize(c.M * c.K);
    for (float& v : x_) v = normal(rng);
    w_.shape = {c.N, c.K};
    for (int64_t n = 0; n < c.N * c.K; ++n) {
      const float v = normal(rng);
      if (c.bf16) {
        w_.bf16.push_back(upperBits(v));
      } else {
        w_.f32.push_back(v);
      }
    }
    if (c.bias)
      for (int64_t n = 0; n < c.N; ++n) b_.push_back(normal(rng));
  }
  std::vector<float> run(const float* x, int64_t M, bool threaded = true) const {
    std::vector<float> y(M * GetParam().N, -7.0f);
    rowGemm(x, M, w_.rows(), b_.empty() ? nullptr : b_.data(), y.data(), threaded);
    return y;
  }
  std::vector<float> x_, b_;
  Weights w_;
};

TEST_P(RowGemm, MatchesAFloat64Reference) {
  const GemmCase& c = GetParam();
  const std::vector<float> y = run(x_.data(), c.M);
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = b_.empty() ? 0.0 : b_[n], magnitude = std::fabs(want);
      for (int64_t k = 0; k < c.K; ++k) {
        const double term = static_cast<double>(x_[i * c.K + k]) * w_.at(n * c.K + k);
        want += term;
        magnitude += std::fabs(term);
      }
      // float32 sums of K terms: a few ulps of the terms' magnitude
      ASSERT_NEAR(y[i * c.N + n], want, 1e-6 * magnitude + 1e-6) << "row " << i << " column " << n;
    }
}

TEST_P(RowGemm, ARowHasTheSameBitsAloneInAnyBatchAndOnAnyThreads) {
  const GemmCase& c = GetParam();
  const std::vector<float> all = run(x_.data(), c.M);
  EXPECT_EQ(0, std::memcmp(all.data(), run(x_.data(), c.M, false).data(), all.size() * sizeof(float)));
  for (int64_t first : {int64_t{0}, c.M / 3, c.M - 1}) {
    const int64_t rows = std::min<int64_t>(c.M - first, first % 5 + 1);  // 1 .. 5 rows from `first`
    const std::vector<float> part = run(&x_[first * c.K], rows);
    EXPECT_EQ(0, std::memcmp(part.data(), &all[first * c.N], part.size() * sizeof(float))) << "rows from " << first;
  }
}

TEST_P(RowGemm, StridedRowsEqualCompactOnes) {
  const GemmCase& c = GetParam();
  const int64_t ldx = c.K + 3, ldy = c.N + 5, ldw = c.K + 2;
  std::vector<float> x(c.M * ldx, 1e30f), y(c.M * ldy, -7.0f);
  for (int64_t i = 0; i < c.M; ++i) std::copy_n(&x_[i * c.K], c.K, &x[i * ldx]);
  Weights wide;
  wide.shape = {c.N, ldw};
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < ldw; ++k) {
      if (c.bf16) wide.bf16.push_back(k < c.K ? w_.bf16[n * c.K + k] : upperBits(1e30f));
      else wide.f32.push_back(k < c.K ? w_.f32[n * c.K + k] : 1e30f);
    }
  WeightRows rows = wide.rows();
  rows.K = c.K, rows.ld = ldw;
  rowGemmStrided(x.data(), ldx, c.M, rows, y.data(), ldy);
  std::vector<float> compact(c.M * c.N);
  rowGemm(x_.data(), c.M, w_.rows(), nullptr, compact.data());  // rowGemmStrided takes no bias
  for (int64_t i = 0; i < c.M; ++i) {
    EXPECT_EQ(0, std::memcmp(&y[i * ldy], &compact[i * c.N], c.N * sizeof(float))) << "row " << i;
    EXPECT_EQ(y[i * ldy + c.N], -7.0f) << "wrote past the row";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RowGemm,
                         testing::Values(GemmCase{1, 1, 1, false, false}, GemmCase{1, 64, 768, false, true},
                                         GemmCase{1, 100, 2048, true, false}, GemmCase{3, 5, 7, false, true},
                                         GemmCase{5, 3, 33, true, true}, GemmCase{4, 4, 16, false, false},
                                         GemmCase{7, 67, 100, false, false}, GemmCase{64, 130, 300, true, true},
                                         GemmCase{130, 20, 1030, false, true}, GemmCase{131, 66, 2051, true, false},
                                         GemmCase{200, 257, 64, false, false}),
                         caseName);

// A bfloat16 weight gives the bits of its float32 widening.
TEST(RowGemmStorage, Bf16WeightsEqualTheirFloat32WideningBitForBit) {
  const int64_t M = 9, N = 70, K = 1100;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(M * K), y16(M * N), y32(M * N);
  for (float& v : x) v = normal(rng);
  Weights w16, w32;
  w16.shape = w32.shape = {N, K};
  for (int64_t n = 0; n < N * K; ++n) {
    w16.bf16.push_back(upperBits(normal(rng)));
    w32.f32.push_back(bf16ToFloat(w16.bf16.back()));
  }
  rowGemm(x.data(), M, w16.rows(), nullptr, y16.data());
  rowGemm(x.data(), M, w32.rows(), nullptr, y32.data());
  EXPECT_EQ(0, std::memcmp(y16.data(), y32.data(), y16.size() * sizeof(float)));
}

// combineRows: out = sum_j p[j] v[j] against float64, for widths below, at and past the vectors.
TEST(CombineRows, MatchesAFloat64Reference) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal;
  for (int64_t d : {1, 5, 16, 64, 80, 100, 256})
    for (int64_t n : {0, 1, 17, 300}) {
      const int64_t ldv = d + 2;
      std::vector<float> p(n), v(std::max<int64_t>(n, 1) * ldv), out(d, -7.0f);
      for (float& x : p) x = uniform(rng);
      for (float& x : v) x = normal(rng);
      combineRows(p.data(), n, v.data(), ldv, d, out.data());
      for (int64_t c = 0; c < d; ++c) {
        double want = 0.0, magnitude = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          want += static_cast<double>(p[j]) * v[j * ldv + c];
          magnitude += std::fabs(static_cast<double>(p[j]) * v[j * ldv + c]);
        }
        ASSERT_NEAR(out[c], want, 1e-6 * magnitude + 1e-7) << "d " << d << " n " << n << " column " << c;
      }
    }
}

TEST(WeightsStorage, TransposeRowsAndLookupsAgreeAcrossStorages) {
  Weights w32, w16;
  w32.shape = w16.shape = {3, 4};
  for (int k = 0; k < 12; ++k) {
    const float v = static_cast<float>(k) - 5.5f;  // exact in bfloat16
    w32.f32.push_back(v);
    w16.bf16.push_back(upperBits(v));
  }
  for (const Weights* w : {&w32, &w16}) {
    EXPECT_EQ(w->bytes(), w == &w32 ? 48u : 24u);
    const Weights t = transposed(*w);
    ASSERT_EQ(t.shape, (Shape{4, 3}));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(t.at(j * 3 + i), w->at(i * 4 + j));
    const Weights middle = rowsOf(*w, 1, 2);
    ASSERT_EQ(middle.shape, (Shape{2, 4}));
    float row[4];
    middle.rowInto(1, row);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(row[j], static_cast<float>(8 + j) - 5.5f);
    const WeightRows r = w->rows();
    EXPECT_EQ(r.N, 3);
    EXPECT_EQ(r.K, 4);
    EXPECT_EQ(r.stride(), 4);
  }
}

}  // namespace
}  // namespace attnscope
