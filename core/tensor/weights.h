// A model's weight matrix as its file holds it: float32, or bfloat16 kept as stored (half
// the memory of a float32 copy: a 1B model in BF16 stays 2.5 GB, not 5). The row GEMM
// (attention/row_gemm.h) widens bfloat16 in registers; nothing else converts it whole.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

// A view of a weight matrix [N, K] in nn.Linear's layout: exactly one of f32 / bf16 is set;
// bf16 holds the upper 16 bits of each float32 (the safetensors BF16 encoding).
struct WeightRows {
  const float* f32 = nullptr;      // [N, K], rows `ld` apart
  const uint16_t* bf16 = nullptr;  // [N, K], rows `ld` apart
  int64_t N = 0, K = 0;
  int64_t ld = 0;                  // row stride; 0 = K
  int64_t stride() const { return ld > 0 ? ld : K; }
};

struct Weights {
  Shape shape;                 // [N, K] (or [N])
  FloatBuffer f32;             // numel(shape) values, or empty when stored as bf16
  std::vector<uint16_t> bf16;  // numel(shape) values, or empty when stored as f32

  Weights() = default;
  explicit Weights(Tensor t) : shape(std::move(t.shape)), f32(std::move(t.data)) {}
  bool empty() const { return f32.empty() && bf16.empty(); }
  int64_t dim(size_t i) const { return shape.at(i); }
  uint64_t bytes() const { return f32.size() * sizeof(float) + bf16.size() * sizeof(uint16_t); }
  float at(int64_t i) const;                   // element i as float32
  void rowInto(int64_t n, float* out) const;   // row n [K] as float32 (an embedding lookup)
  WeightRows rows() const;                     // [N, K]; a vector [N] as [1, N]
};

float bf16ToFloat(uint16_t bits);

// The [K, N] transpose (GPT-2's Conv1D weights are stored [in, out]).
Weights transposed(const Weights& w);
// Rows [first, first + count) of a [R, C] matrix, or elements of a vector.
Weights rowsOf(const Weights& w, int64_t first, int64_t count);

}  // namespace attnscope
