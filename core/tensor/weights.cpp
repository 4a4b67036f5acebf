#include "tensor/weights.h"

#include <algorithm>
#include <cstring>

namespace attnscope {
namespace {

template <class Buffer>
Buffer transposedData(const Buffer& v, int64_t r, int64_t c) {
  if (v.empty()) return {};  // the other storage
  Buffer out(v.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j * r + i] = v[i * c + j];
  return out;
}

template <class Buffer>
Buffer rowData(const Buffer& v, int64_t C, int64_t first, int64_t count) {
  if (v.empty()) return {};
  return Buffer(v.begin() + first * C, v.begin() + (first + count) * C);
}

}  // namespace

float bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

float Weights::at(int64_t i) const { return f32.empty() ? bf16ToFloat(bf16[i]) : f32[i]; }

void Weights::rowInto(int64_t n, float* out) const {
  const int64_t K = dim(1);
  if (!f32.empty()) {
    std::copy_n(&f32[n * K], K, out);
    return;
  }
  for (int64_t k = 0; k < K; ++k) out[k] = bf16ToFloat(bf16[n * K + k]);
}

WeightRows Weights::rows() const {
  const int64_t N = shape.size() == 2 ? dim(0) : 1, K = shape.size() == 2 ? dim(1) : dim(0);
  return {f32.empty() ? nullptr : f32.data(), bf16.empty() ? nullptr : bf16.data(), N, K};
}

Weights transposed(const Weights& w) {
  const int64_t r = w.dim(0), c = w.dim(1);
  Weights out;
  out.shape = {c, r};
  out.f32 = transposedData(w.f32, r, c);
  out.bf16 = transposedData(w.bf16, r, c);
  return out;
}

Weights rowsOf(const Weights& w, int64_t first, int64_t count) {
  const int64_t C = w.shape.size() == 2 ? w.dim(1) : 1;
  Weights out;
  out.shape = w.shape.size() == 2 ? Shape{count, C} : Shape{count};
  out.f32 = rowData(w.f32, C, first, count);
  out.bf16 = rowData(w.bf16, C, first, count);
  return out;
}

}  // namespace attnscope
