// A model's weight matrix: float32, or bfloat16 kept as stored (half the memory of a float32
// copy: a 1B model in BF16 stays 2.5 GB, not 5). The row GEMM (attention/row_gemm.h) widens
// bfloat16 in registers; nothing else converts it whole. A model's linear maps are kept in
// panels (packPanels), the layout the row GEMM reads without repacking.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

// Panels: W [N, K] as ceil(N / 64) blocks of W^T, [ceil(N / 64), K, 64], zeros past row N.
// One step over k reads 64 consecutive outputs' weights, contiguous (the row GEMM's tiles).
constexpr int64_t kPanelWidth = 64;
int64_t panelCount(int64_t N);

// A view of a weight matrix [N, K]: exactly one of f32 / bf16 is set; bf16 holds the upper
// 16 bits of each float32 (the safetensors BF16 encoding). In nn.Linear's layout (rows `ld`
// apart), or in panels.
struct WeightRows {
  const float* f32 = nullptr;
  const uint16_t* bf16 = nullptr;
  int64_t N = 0, K = 0;
  int64_t ld = 0;                  // row stride; 0 = K (ignored for panels)
  bool panels = false;
  int64_t stride() const { return ld > 0 ? ld : K; }
};

// Panel p of W [N, K] (rows ld apart) into out [K, 64]: out[k][j] = W[64 p + j][k], 0 past N.
void panelOf(const float* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out);
void panelOf(const uint16_t* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out);  // widened

struct Weights {
  Shape shape;                 // [N, K] (or [N])
  FloatBuffer f32;             // numel(shape) values, or empty when stored as bf16
  Bf16Buffer bf16;             // numel(shape) values, or empty when stored as f32
  bool panels = false;         // a matrix in panels (packPanels): panelCount(N) * K * 64 values

  Weights() = default;
  explicit Weights(Tensor t) : shape(std::move(t.shape)), f32(std::move(t.data)) {}
  bool empty() const { return f32.empty() && bf16.empty(); }
  int64_t dim(size_t i) const { return shape.at(i); }
  uint64_t bytes() const { return f32.size() * sizeof(float) + bf16.size() * sizeof(uint16_t); }
  float at(int64_t i) const;                   // element i as float32
  void rowInto(int64_t n, float* out) const;   // row n [K] as float32 (an embedding lookup)
  WeightRows rows() const;                     // [N, K]; a vector [N] as [1, N]
};

// A matrix [N, K] re-laid out in panels, in its storage type (the row GEMM's layout).
void packPanels(Weights& w);
// W [count, K] = columns [first, first + count) of kn [K, N] transposed, in panels (GPT-2's
// Conv1D weights are stored [in, out]: no transpose in between).
Weights panelsOfColumns(const Weights& kn, int64_t first, int64_t count);
// w = the bfloat16 matrix `rows` [N, K] in panels (read straight from a file's mapping).
void packPanelsFrom(const uint16_t* rows, int64_t N, int64_t K, Weights& w);

float bf16ToFloat(uint16_t bits);

// Rows [first, first + count) of a [R, C] matrix, or elements of a vector (not of panels).
Weights rowsOf(const Weights& w, int64_t first, int64_t count);

}  // namespace attnscope
