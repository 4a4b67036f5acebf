// The row GEMM (attention/row_gemm.h), scoreRows and combineRowBlock, table-driven against float64
// references: every shape class (one row, tile edges, 128-row passes, 1024-wide k chunks with
// tails), float32 and bfloat16 weights, bias, strides; and the property the runners rely on:
// a row's (a cell's) bits do not depend on the rows, keys or threads sharing the call.
#include <gtest/gtest.h>

#include <algorithm>
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

// The same weights in panels (a model's layout) give the same bits as packed on the fly.
TEST_P(RowGemm, PanelsGiveTheBitsOfTheRowLayout) {
  const GemmCase& c = GetParam();
  Weights packed = w_;
  packPanels(packed);
  ASSERT_TRUE(packed.panels);
  const std::vector<float> rows_layout = run(x_.data(), c.M);
  std::vector<float> y(c.M * c.N, -7.0f);
  rowGemm(x_.data(), c.M, packed.rows(), b_.empty() ? nullptr : b_.data(), y.data());
  EXPECT_EQ(0, std::memcmp(y.data(), rows_layout.data(), y.size() * sizeof(float)));
  for (int64_t rows = 1; rows <= std::min<int64_t>(3, c.M); ++rows) {  // few rows: two panels per tile
    for (bool threaded : {true, false}) {
      rowGemm(x_.data(), rows, packed.rows(), b_.empty() ? nullptr : b_.data(), y.data(), threaded);
      EXPECT_EQ(0, std::memcmp(y.data(), rows_layout.data(), rows * c.N * sizeof(float))) << rows << " rows";
    }
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

INSTANTIATE_TEST_SUITE_P(Shapes, RowGemm,
                         testing::Values(GemmCase{1, 1, 1, false, false}, GemmCase{1, 64, 768, false, true},
                                         GemmCase{1, 100, 2048, true, false}, GemmCase{3, 5, 7, false, true},
                                         GemmCase{5, 3, 33, true, true}, GemmCase{4, 4, 16, false, false},
                                         GemmCase{7, 67, 100, false, false}, GemmCase{64, 130, 300, true, true},
                                         GemmCase{130, 20, 1030, false, true}, GemmCase{131, 66, 2051, true, false},
                                         GemmCase{200, 257, 64, false, false}, GemmCase{9, 128, 3, true, true},
                                         GemmCase{17, 193, 40, false, true}),
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

struct ScoreCase {
  int64_t M, N, K;
};

class ScoreRows : public testing::TestWithParam<ScoreCase> {
 protected:
  void SetUp() override {
    const ScoreCase& c = GetParam();
    std::mt19937 rng(static_cast<unsigned>(c.M * 31 + c.N * 5 + c.K));
    std::normal_distribution<float> normal;
    q_.resize(c.M * ldq());
    k_.resize(c.N * c.K);
    for (float& v : q_) v = normal(rng);
    for (float& v : k_) v = normal(rng);
    kt_ = transposeKeys(k_.data(), c.N, c.K);
  }
  int64_t ldq() const { return GetParam().K + 3; }
  // rows [i0, i0 + rows) by keys [j0, j1), rows ldy = keys + 2 apart (the 2 must stay -7)
  std::vector<float> run(int64_t i0, int64_t rows, int64_t j0, int64_t j1, bool transposed) const {
    std::vector<float> y(rows * (j1 - j0 + 2), -7.0f);
    scoreRows(&q_[i0 * ldq()], ldq(), rows, k_.data(), transposed ? &kt_ : nullptr, j0, j1, GetParam().K, y.data(),
              j1 - j0 + 2);
    return y;
  }
  std::vector<float> q_, k_;
  KeysT kt_;
};

TEST_P(ScoreRows, MatchesAFloat64Reference) {
  const ScoreCase& c = GetParam();
  for (bool transposed : {false, true}) {
    const std::vector<float> y = run(0, c.M, 0, c.N, transposed);
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) {
        double want = 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double term = static_cast<double>(q_[i * ldq() + k]) * k_[j * c.K + k];
          want += term;
          magnitude += std::fabs(term);
        }
        ASSERT_NEAR(y[i * (c.N + 2) + j], want, 1e-6 * magnitude + 1e-7) << "row " << i << " key " << j;
      }
      EXPECT_EQ(y[i * (c.N + 2) + c.N], -7.0f) << "wrote past the keys";
      EXPECT_EQ(y[i * (c.N + 2) + c.N + 1], -7.0f) << "wrote past the keys";
    }
  }
}

TEST_P(ScoreRows, ACellHasTheSameBitsInAnyRowsAndKeysTransposedOrNot) {
  const ScoreCase& c = GetParam();
  const std::vector<float> all = run(0, c.M, 0, c.N, true);
  EXPECT_EQ(0, std::memcmp(all.data(), run(0, c.M, 0, c.N, false).data(), all.size() * sizeof(float)));
  for (int64_t i0 : {int64_t{0}, c.M / 2, c.M - 1})
    for (int64_t j0 : {int64_t{0}, c.N / 3, c.N - 1}) {
      const int64_t rows = std::min<int64_t>(c.M - i0, i0 % 6 + 1), j1 = std::min(c.N, j0 + 1 + (j0 * 7) % 70);
      for (bool transposed : {false, true}) {
        const std::vector<float> part = run(i0, rows, j0, j1, transposed);
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_EQ(0, std::memcmp(&part[r * (j1 - j0 + 2)], &all[(i0 + r) * (c.N + 2) + j0], (j1 - j0) * sizeof(float)))
              << "row " << i0 + r << " keys [" << j0 << ", " << j1 << ")" << (transposed ? " transposed" : "");
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScoreRows,
                         testing::Values(ScoreCase{1, 1, 1}, ScoreCase{1, 1024, 64}, ScoreCase{3, 17, 5},
                                         ScoreCase{4, 64, 64}, ScoreCase{7, 100, 128}, ScoreCase{64, 1030, 64},
                                         ScoreCase{65, 33, 256}, ScoreCase{9, 70, 1}, ScoreCase{2, 5, 0},
                                         ScoreCase{9, 17, 8}),
                         [](const testing::TestParamInfo<ScoreCase>& info) {
                           return "M" + std::to_string(info.param.M) + "_N" + std::to_string(info.param.N) + "_K" +
                                  std::to_string(info.param.K);
                         });

// combineRowBlock on one row: out = sum_j p[j] v[j] against float64, for widths below, at and past the vectors.
TEST(CombineRowBlock, ARowMatchesAFloat64Reference) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal;
  for (int64_t d : {1, 5, 16, 64, 80, 100, 256})
    for (int64_t n : {0, 1, 17, 300}) {
      const int64_t ldv = d + 2;
      std::vector<float> p(n), v(std::max<int64_t>(n, 1) * ldv), out(d, -7.0f);
      for (float& x : p) x = uniform(rng);
      for (float& x : v) x = normal(rng);
      const RowSpan keys{0, n};
      combineRowBlock(p.data(), n, &keys, 1, v.data(), ldv, d, out.data(), d);
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

// combineRowBlock: each row equals that row computed alone, bit for bit, for causal,
// windowed, empty, disjoint and whole-row key spans, at widths below, at and past the vectors.
TEST(CombineRowBlock, EachRowHasTheBitsOfTheRowAlone) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal;
  const int64_t S = 90;
  for (int64_t d : {1, 5, 16, 64, 80, 100, 256}) {
    const int64_t ldv = d + 1, ldo = d + 2;
    std::vector<float> p(S * S), v(S * ldv);
    for (float& x : p) x = uniform(rng);
    for (float& x : v) x = normal(rng);
    const std::vector<std::vector<RowSpan>> patterns = {
        {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 6}, {0, 7}},     // causal
        {{0, 4}, {1, 5}, {2, 6}, {3, 7}, {4, 8}},                     // a window
        {{0, 0}, {0, 3}, {0, 0}, {2, 9}, {40, 90}},                   // empty rows, disjoint spans
        {{0, 90}, {10, 20}, {5, 85}},                                  // a whole row
        {{7, 60}}};
    for (const std::vector<RowSpan>& keys : patterns) {
      const int64_t rows = static_cast<int64_t>(keys.size());
      std::vector<float> block(rows * ldo, -7.0f), alone(d);
      combineRowBlock(p.data(), S, keys.data(), rows, v.data(), ldv, d, block.data(), ldo);
      for (int64_t r = 0; r < rows; ++r) {
        combineRowBlock(&p[r * S], S, &keys[r], 1, v.data(), ldv, d, alone.data(), d);
        EXPECT_EQ(0, std::memcmp(alone.data(), &block[r * ldo], d * sizeof(float))) << "d " << d << " row " << r;
        EXPECT_EQ(block[r * ldo + d], -7.0f) << "wrote past the row";
      }
    }
  }
}

TEST(WeightsStorage, RowsAndLookupsAgreeAcrossStorages) {
  Weights w32, w16;
  w32.shape = w16.shape = {3, 4};
  for (int k = 0; k < 12; ++k) {
    const float v = static_cast<float>(k) - 5.5f;  // exact in bfloat16
    w32.f32.push_back(v);
    w16.bf16.push_back(upperBits(v));
  }
  for (const Weights* w : {&w32, &w16}) {
    EXPECT_EQ(w->bytes(), w == &w32 ? 48u : 24u);
    const Weights middle = rowsOf(*w, 1, 2);
    ASSERT_EQ(middle.shape, (Shape{2, 4}));
    float row[4];
    middle.rowInto(1, row);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(row[j], static_cast<float>(8 + j) - 5.5f);
    const WeightRows r = w->rows();
    EXPECT_EQ(r.N, 3);
    EXPECT_EQ(r.K, 4);
    EXPECT_EQ(r.stride(), 4);
    EXPECT_FALSE(r.panels);
  }
}

// Panels: [ceil(N / 64), K, 64] in the storage type, zeros past N; lookups read across them;
// the load-time reshapes refuse them.
TEST(WeightsStorage, PanelsHoldW_TransposedInBlocksOf64Outputs) {
  const int64_t N = 70, K = 3;
  Weights w32, w16;
  w32.shape = w16.shape = {N, K};
  for (int64_t k = 0; k < N * K; ++k) {
    const float v = static_cast<float>(k % 200) - 99.0f;  // exact in bfloat16
    w32.f32.push_back(v);
    w16.bf16.push_back(upperBits(v));
  }
  for (Weights* w : {&w32, &w16}) {
    const Weights rows = *w;
    packPanels(*w);
    ASSERT_TRUE(w->panels);
    ASSERT_EQ(w->shape, (Shape{N, K}));
    EXPECT_EQ(w->bytes(), static_cast<uint64_t>(2 * K * kPanelWidth) * (w == &w32 ? 4 : 2));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t slot = ((n / 64) * K + k) * 64 + n % 64;
        EXPECT_EQ(w == &w32 ? w->f32[slot] : bf16ToFloat(w->bf16[slot]), rows.at(n * K + k));
        EXPECT_EQ(w->at(n * K + k), rows.at(n * K + k));
      }
    for (int64_t k = 0; k < K; ++k)  // panel 1 holds rows 64 .. 69, zeros after
      for (int64_t j = N - 64; j < 64; ++j) {
        const int64_t slot = (K + k) * 64 + j;
        EXPECT_EQ(w == &w32 ? w->f32[slot] : bf16ToFloat(w->bf16[slot]), 0.0f);
      }
    float row[K];
    w->rowInto(66, row);
    for (int64_t k = 0; k < K; ++k) EXPECT_EQ(row[k], rows.at(66 * K + k));
    EXPECT_TRUE(w->rows().panels);
    EXPECT_THROW(rowsOf(*w, 0, 1), std::logic_error);
    EXPECT_THROW(packPanels(*w), std::logic_error);
  }
}

// kn [K, N] transposed, in rows.
Weights transposeOf(const Weights& kn) {
  const int64_t K = kn.dim(0), N = kn.dim(1);
  Weights t;
  t.shape = {N, K};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      if (!kn.f32.empty()) t.f32.push_back(kn.f32[k * N + n]);
      if (!kn.bf16.empty()) t.bf16.push_back(kn.bf16[k * N + n]);
    }
  return t;
}

// Columns of a Conv1D-style [K, N] matrix straight into panels equal the transpose's rows packed.
TEST(WeightsStorage, PanelsOfColumnsEqualTheTransposesRowsPacked) {
  const int64_t K = 5, N = 150;
  Weights w32, w16;
  w32.shape = w16.shape = {K, N};
  for (int64_t k = 0; k < K * N; ++k) {
    const float v = static_cast<float>(k % 97) - 48.0f;
    w32.f32.push_back(v);
    w16.bf16.push_back(upperBits(v));
  }
  for (const Weights* w : {&w32, &w16})
    for (auto [first, count] : {std::pair<int64_t, int64_t>{0, N}, {50, 50}, {100, 50}, {3, 70}}) {
      Weights want = rowsOf(transposeOf(*w), first, count);
      packPanels(want);
      const Weights got = panelsOfColumns(*w, first, count);
      ASSERT_TRUE(got.panels);
      EXPECT_EQ(got.shape, (Shape{count, K}));
      EXPECT_EQ(got.f32, want.f32) << first << " " << count;
      EXPECT_EQ(got.bf16, want.bf16) << first << " " << count;
    }
  EXPECT_THROW(panelsOfColumns(w32, 100, 51), std::logic_error);
}

}  // namespace
}  // namespace attnscope
