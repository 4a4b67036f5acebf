// Quantized weights (tensor/weights.h over ggml blocks, tensor/ggml_quants.h) in the row GEMM
// and the embedding lookup: the GEMM on blocks equals the GEMM on the same matrix dequantized
// to float32 bit for bit (dequantized a panel at a time, the same FMA chains) and a float64
// reference on the dequantized values; a row map reorders rows; rowInto is one row's values.
// Up to kDecodeRows rows take the decode path (attention/quant_gemm.h: blocks dequantized in
// registers across rows), more the panel path: a row alone equals the same row among many.
// Blocks are random bytes with finite scales, for every type the decode path decodes (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, F16, BF16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <hwy/targets.h>

#include "attention/quant_gemm.h"
#include "attention/row_gemm.h"
#include "tensor/ggml_quants.h"
#include "tensor/weights.h"

namespace attnscope {
namespace {

struct QuantCase {
  uint32_t type;
  std::vector<int> scale_offsets;  // bytes of each block's float16 scales (BF16's bfloat16 value)
  int64_t M, N, K;
};

std::string caseName(const testing::TestParamInfo<QuantCase>& info) {
  const QuantCase& c = info.param;
  return std::string(ggmlType(c.type)->name) + "_M" + std::to_string(c.M) + "_N" + std::to_string(c.N) + "_K" +
         std::to_string(c.K);
}

class QuantWeights : public testing::TestWithParam<QuantCase> {
 protected:
  void SetUp() override {
    const QuantCase& c = GetParam();
    type_ = ggmlType(c.type);
    std::mt19937 rng(static_cast<unsigned>(c.type * 97 + c.N));
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> normal;
    const uint64_t row_bytes = ggmlRowBytes(*type_, c.K);
    blocks_.resize(c.N * row_bytes);
    for (uint8_t& b : blocks_) b = static_cast<uint8_t>(byte(rng));
    for (uint64_t at = 0; at < blocks_.size(); at += type_->bytes)
      for (int offset : c.scale_offsets) {
        const float v = 0.02f * normal(rng);
        const uint16_t bits = c.type == 30 ? Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(v))
                                           : Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
        std::memcpy(&blocks_[at + offset], &bits, 2);
      }
    x_.resize(std::max(c.M, kManyRows) * c.K);
    for (float& v : x_) v = normal(rng);
    bias_.resize(c.N);
    for (float& v : bias_) v = normal(rng);
    dense_.shape = {c.N, c.K};
    dense_.f32.resize(c.N * c.K);
    for (int64_t n = 0; n < c.N; ++n) dequantizeRow(*type_, &blocks_[n * row_bytes], &dense_.f32[n * c.K], c.K);
  }
  // Rows [first, first + M) of x times w (M = the case's by default), plus the bias or not.
  std::vector<float> gemm(const Weights& w, int64_t first = 0, int64_t M = 0, bool bias = true) const {
    const QuantCase& c = GetParam();
    M = M > 0 ? M : c.M;
    std::vector<float> y(M * c.N);
    rowGemm(x_.data() + first * c.K, M, w.rows(), bias ? bias_.data() : nullptr, y.data());
    return y;
  }
  static constexpr int64_t kManyRows = kDecodeRows + 3;  // past the decode path
  const GgmlTypeInfo* type_ = nullptr;
  std::vector<uint8_t> blocks_;
  std::vector<float> x_, bias_;
  Weights dense_;
};

TEST_P(QuantWeights, GemmEqualsTheDequantizedMatrixBitForBit) {
  const QuantCase& c = GetParam();
  const Weights q = quantizedWeights(*type_, blocks_.data(), c.N, c.K, nullptr);
  const std::vector<float> got = gemm(q), dense = gemm(dense_);
  ASSERT_EQ(0, std::memcmp(got.data(), dense.data(), got.size() * sizeof(float)));
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = bias_[n], magnitude = std::fabs(want);
      for (int64_t k = 0; k < c.K; ++k) {
        const double term = static_cast<double>(x_[i * c.K + k]) * dense_.f32[n * c.K + k];
        want += term;
        magnitude += std::fabs(term);
      }
      ASSERT_NEAR(got[i * c.N + n], want, 1e-6 * magnitude + 1e-6) << "row " << i << " column " << n;
    }
}

TEST_P(QuantWeights, RowMapReordersRowsAndRowIntoReadsOne) {
  const QuantCase& c = GetParam();
  std::vector<int64_t> order(c.N);
  for (int64_t n = 0; n < c.N; ++n) order[n] = (n * 7 + 3) % c.N;  // a permutation (N odd or coprime with 7)
  const Weights q = quantizedWeights(*type_, blocks_.data(), c.N, c.K, nullptr, order);
  EXPECT_EQ(q.bytes(), static_cast<uint64_t>(c.N) * ggmlRowBytes(*type_, c.K));
  const std::vector<float> got = gemm(q, 0, 0, false), plain = gemm(dense_, 0, 0, false);
  std::vector<float> row(c.K);
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t i = 0; i < c.M; ++i) ASSERT_EQ(got[i * c.N + n], plain[i * c.N + order[n]]);
    q.rowInto(n, row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), &dense_.f32[order[n] * c.K], c.K * sizeof(float)));
  }
}

// Every row alone and the first kDecodeRows together (the decode path) equal the same rows of
// a GEMM over kManyRows rows (the panel path) bit for bit, bias included.
TEST_P(QuantWeights, RowAloneEqualsTheRowAmongMany) {
  const QuantCase& c = GetParam();
  const Weights q = quantizedWeights(*type_, blocks_.data(), c.N, c.K, nullptr);
  const std::vector<float> many = gemm(q, 0, kManyRows);
  for (int64_t m = 2; m <= kDecodeRows; ++m) {  // each count of rows bundles its own number of row vectors
    const std::vector<float> few = gemm(q, 0, m);
    ASSERT_EQ(0, std::memcmp(few.data(), many.data(), few.size() * sizeof(float))) << m << " rows";
  }
  std::vector<float> decoded(kManyRows * c.N);  // the decode path itself, no bias: its types and its limit
  ASSERT_TRUE(decodeQuantRows(x_.data(), c.K, kDecodeRows, q.rows(), decoded.data(), c.N, true));
  ASSERT_FALSE(decodeQuantRows(x_.data(), c.K, kDecodeRows + 1, q.rows(), decoded.data(), c.N, true));
  const std::vector<float> plain = gemm(dense_, 0, kDecodeRows, false);
  ASSERT_EQ(0, std::memcmp(decoded.data(), plain.data(), plain.size() * sizeof(float)));
  for (int64_t i = 0; i < kManyRows; ++i) {
    const std::vector<float> alone = gemm(q, i, 1);
    ASSERT_EQ(0, std::memcmp(alone.data(), &many[i * c.N], c.N * sizeof(float))) << "row " << i;
  }
}

// The same on every instruction set this machine runs and the build compiled (the decoders
// differ by vector width and gathers; CI's machine may pick another than this one's).
TEST_P(QuantWeights, RowAloneEqualsTheRowAmongManyOnEveryTarget) {
  const QuantCase& c = GetParam();
  const Weights q = quantizedWeights(*type_, blocks_.data(), c.N, c.K, nullptr);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const std::vector<float> many = gemm(q, 0, kManyRows);
    for (int64_t m = 1; m <= kDecodeRows; ++m) {
      const std::vector<float> few = gemm(q, 0, m);
      EXPECT_EQ(0, std::memcmp(few.data(), many.data(), few.size() * sizeof(float))) << hwy::TargetName(target) << ", " << m << " rows";
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the machine supports
}

// N off multiples of 16 and 64, K of several blocks, M on both sides of kDecodeRows.
INSTANTIATE_TEST_SUITE_P(Types, QuantWeights,
                         testing::Values(QuantCase{8, {0}, 1, 65, 64}, QuantCase{8, {0}, 5, 130, 96},
                                         QuantCase{8, {0}, 4, 23, 160}, QuantCase{12, {0, 2}, 3, 67, 256},
                                         QuantCase{12, {0, 2}, 1, 101, 768}, QuantCase{14, {208}, 2, 9, 512},
                                         QuantCase{14, {208}, 4, 77, 768}, QuantCase{14, {208}, 130, 64, 256},
                                         QuantCase{1, {0}, 2, 37, 96}, QuantCase{1, {0}, 1, 71, 30},
                                         QuantCase{13, {0, 2}, 2, 67, 512}, QuantCase{13, {0, 2}, 5, 33, 256},
                                         QuantCase{2, {0}, 1, 45, 96}, QuantCase{2, {0}, 6, 71, 64},
                                         QuantCase{3, {0, 2}, 3, 37, 128}, QuantCase{3, {0, 2}, 5, 101, 64},
                                         QuantCase{6, {0}, 4, 75, 160}, QuantCase{6, {0}, 1, 19, 320},
                                         QuantCase{7, {0, 2}, 2, 53, 96}, QuantCase{7, {0, 2}, 6, 29, 64},
                                         QuantCase{20, {0}, 3, 81, 128}, QuantCase{20, {0}, 5, 17, 64},
                                         QuantCase{23, {0}, 1, 43, 512}, QuantCase{23, {0}, 5, 69, 256},
                                         QuantCase{10, {80, 82}, 3, 67, 512}, QuantCase{10, {80, 82}, 5, 33, 768},
                                         QuantCase{11, {108}, 2, 75, 768}, QuantCase{11, {108}, 6, 41, 512},
                                         QuantCase{30, {0}, 1, 53, 96}, QuantCase{30, {0}, 5, 29, 62}),
                         caseName);

}  // namespace
}  // namespace attnscope
