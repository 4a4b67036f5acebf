// Quantized weights (tensor/weights.h over ggml blocks, tensor/ggml_quants.h) in the row GEMM
// and the embedding lookup: the GEMM on blocks equals the GEMM on the same matrix dequantized
// to float32 bit for bit (dequantized a panel at a time, the same FMA chains) and a float64
// reference on the dequantized values; a row map reorders rows; rowInto is one row's values.
// Blocks are random bytes with finite scales (Q8_0, Q4_K, Q6_K: three block layouts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "attention/row_gemm.h"
#include "tensor/ggml_quants.h"
#include "tensor/weights.h"

namespace attnscope {
namespace {

struct QuantCase {
  uint32_t type;
  std::vector<int> scale_offsets;  // bytes of each block's float16 scales
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
        const uint16_t bits = Eigen::numext::bit_cast<uint16_t>(Eigen::half(0.02f * normal(rng)));
        std::memcpy(&blocks_[at + offset], &bits, 2);
      }
    x_.resize(c.M * c.K);
    for (float& v : x_) v = normal(rng);
    dense_.shape = {c.N, c.K};
    dense_.f32.resize(c.N * c.K);
    for (int64_t n = 0; n < c.N; ++n) dequantizeRow(*type_, &blocks_[n * row_bytes], &dense_.f32[n * c.K], c.K);
  }
  std::vector<float> gemm(const Weights& w) const {
    const QuantCase& c = GetParam();
    std::vector<float> y(c.M * c.N);
    rowGemm(x_.data(), c.M, w.rows(), nullptr, y.data());
    return y;
  }
  const GgmlTypeInfo* type_ = nullptr;
  std::vector<uint8_t> blocks_;
  std::vector<float> x_;
  Weights dense_;
};

TEST_P(QuantWeights, GemmEqualsTheDequantizedMatrixBitForBit) {
  const QuantCase& c = GetParam();
  const Weights q = quantizedWeights(*type_, blocks_.data(), c.N, c.K, nullptr);
  const std::vector<float> got = gemm(q), dense = gemm(dense_);
  ASSERT_EQ(0, std::memcmp(got.data(), dense.data(), got.size() * sizeof(float)));
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = 0.0, magnitude = 0.0;
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
  const std::vector<float> got = gemm(q), plain = gemm(dense_);
  std::vector<float> row(c.K);
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t i = 0; i < c.M; ++i) ASSERT_EQ(got[i * c.N + n], plain[i * c.N + order[n]]);
    q.rowInto(n, row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), &dense_.f32[order[n] * c.K], c.K * sizeof(float)));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantWeights,
                         testing::Values(QuantCase{8, {0}, 1, 65, 64}, QuantCase{8, {0}, 5, 130, 96},
                                         QuantCase{12, {0, 2}, 3, 67, 256}, QuantCase{14, {208}, 2, 9, 512},
                                         QuantCase{14, {208}, 130, 64, 256}),
                         caseName);

}  // namespace
}  // namespace attnscope
