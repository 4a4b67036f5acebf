// A model's weight matrix: float32, bfloat16 kept as stored (half the memory of a float32
// copy: a 1B model in BF16 stays 2.5 GB, not 5), or a GGUF file's ggml blocks as the file
// stores them (memory-mapped, tensor/ggml_quants.h). The row GEMM (attention/row_gemm.h)
// widens bfloat16 in registers and dequantizes ggml blocks a panel at a time; nothing else
// converts a matrix whole. A model's linear maps are kept in
// panels (packPanels), the layout the row GEMM reads without repacking.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

// Panels: W [N, K] as ceil(N / 64) blocks of W^T, [ceil(N / 64), K, 64], zeros past row N.
// One step over k reads 64 consecutive outputs' weights, contiguous (the row GEMM's tiles).
constexpr int64_t kPanelWidth = 64;
int64_t panelCount(int64_t N);

struct GgmlTypeInfo;

// Rows of ggml blocks [N, K]: row n is stored at data + row_map[n] * row_bytes (row_map null:
// row n). A row map reorders rows without touching the file (llama.cpp's Q/K permutation).
struct QuantRows {
  const GgmlTypeInfo* type = nullptr;  // null: not quantized
  const uint8_t* data = nullptr;
  uint64_t row_bytes = 0;
  const int64_t* row_map = nullptr;
  int64_t span_rows = 0;  // rows the blocks span from data: row_map's largest + 1, else N
  const uint8_t* row(int64_t n) const { return data + (row_map ? row_map[n] : n) * row_bytes; }
};

// A view of a weight matrix [N, K]: exactly one of f32 / bf16 / quant is set; bf16 holds the upper
// 16 bits of each float32 (the safetensors BF16 encoding). In nn.Linear's layout (rows `ld`
// apart), or in panels.
struct WeightRows {
  const float* f32 = nullptr;
  const uint16_t* bf16 = nullptr;
  int64_t N = 0, K = 0;
  int64_t ld = 0;                  // row stride; 0 = K (ignored for panels)
  bool panels = false;
  QuantRows quant;                 // ggml blocks (never panels)
  int64_t stride() const { return ld > 0 ? ld : K; }
};

// Panel p of W [N, K] (rows ld apart) into out [K, 64]: out[k][j] = W[64 p + j][k], 0 past N.
void panelOf(const float* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out);
void panelOf(const uint16_t* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out);  // widened
void panelOf(const QuantRows& w, int64_t N, int64_t K, int64_t p, float* out);              // dequantized

struct Weights {
  Shape shape;                 // [N, K] (or [N])
  FloatBuffer f32;             // numel(shape) values, or empty when stored as bf16
  Bf16Buffer bf16;             // numel(shape) values, or empty when stored as f32
  bool panels = false;         // a matrix in panels (packPanels): panelCount(N) * K * 64 values
  // ggml blocks (quant.type set, f32 and bf16 empty): rows in the mapping `owner` keeps alive.
  QuantRows quant;
  std::shared_ptr<const void> owner;
  std::shared_ptr<const std::vector<int64_t>> row_map;  // [N] or null (quant.row_map points into it)

  Weights() = default;
  explicit Weights(Tensor t) : shape(std::move(t.shape)), f32(std::move(t.data)) {}
  bool empty() const { return f32.empty() && bf16.empty() && !quant.type; }
  int64_t dim(size_t i) const { return shape.at(i); }
  uint64_t bytes() const;  // as held (a quantized matrix: its blocks' bytes, mapped)
  float at(int64_t i) const;                   // element i as float32
  void rowInto(int64_t n, float* out) const;   // row n [K] as float32 (an embedding lookup)
  WeightRows rows() const;                     // [N, K]; a vector [N] as [1, N]
};

// A matrix [N, K] re-laid out in panels, in its storage type (the row GEMM's layout).
void packPanels(Weights& w);
// W [count, K] = columns [first, first + count) of kn [K, N] transposed, in panels (GPT-2's
// Conv1D weights are stored [in, out]: no transpose in between).
Weights panelsOfColumns(const Weights& kn, int64_t first, int64_t count);
// The same from kn [K, ld] as it lies (a file's mapping): float32, or bfloat16 kept as stored.
Weights panelsOfColumns(const float* kn, int64_t K, int64_t ld, int64_t first, int64_t count);
Weights panelsOfColumns(const uint16_t* kn, int64_t K, int64_t ld, int64_t first, int64_t count);
// w = the bfloat16 matrix `rows` [N, K] in panels (read straight from a file's mapping).
void packPanelsFrom(const uint16_t* rows, int64_t N, int64_t K, Weights& w);

float bf16ToFloat(uint16_t bits);

// Weights over a GGUF tensor's blocks [N, K], mapped (owner keeps the mapping), rows in
// row_map's order when given.
Weights quantizedWeights(const GgmlTypeInfo& type, const uint8_t* data, int64_t N, int64_t K,
                         std::shared_ptr<const void> owner, std::vector<int64_t> row_map = {});

// Rows [first, first + count) of a [R, C] matrix, or elements of a vector (not of panels).
Weights rowsOf(const Weights& w, int64_t first, int64_t count);

}  // namespace attnscope
