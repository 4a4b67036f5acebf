#include "tensor/weights.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "tensor/ggml_quants.h"

namespace attnscope {
namespace {

template <class Buffer>
Buffer rowData(const Buffer& v, int64_t C, int64_t first, int64_t count) {
  if (v.empty()) return {};
  return Buffer(v.begin() + first * C, v.begin() + (first + count) * C);
}

// Blocks of 256 k: a block's reads (64 rows' pieces) and writes stay in L1.
template <class In, class Out, class Convert>
void panelData(const In* w, int64_t ld, int64_t N, int64_t K, int64_t p, Out* out, Convert convert) {
  const int64_t n0 = p * kPanelWidth, cols = std::min(kPanelWidth, N - n0);
  constexpr int64_t kBlock = 256;
  for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
    const int64_t k1 = std::min(K, k0 + kBlock);
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      if (j >= cols) {
        for (int64_t k = k0; k < k1; ++k) out[k * kPanelWidth + j] = Out{};
        continue;
      }
      const In* row = w + (n0 + j) * ld;
      for (int64_t k = k0; k < k1; ++k) out[k * kPanelWidth + j] = convert(row[k]);
    }
  }
}

constexpr auto unchanged = [](auto v) { return v; };
constexpr auto widened = [](uint16_t v) { return bf16ToFloat(v); };

template <class T>
void packAll(const T* rows, int64_t N, int64_t K, T* out) {
  const int64_t panels = panelCount(N);
#pragma omp parallel for schedule(dynamic) if (panels > 1 && N * K >= (int64_t{1} << 16))
  for (int64_t p = 0; p < panels; ++p) panelData(rows, K, N, K, p, out + p * K * kPanelWidth, unchanged);
}

template <class Buffer>
Buffer packedData(const Buffer& v, int64_t N, int64_t K) {
  if (v.empty()) return {};
  Buffer out;
  resizePrefaulted(out, static_cast<size_t>(panelCount(N) * K * kPanelWidth), std::nullopt);  // packAll writes all
  packAll(v.data(), N, K, out.data());
  return out;
}

// Panels of W = columns [first, first + count) of kn [K, ld] transposed: a step over k copies
// up to 64 consecutive values of a row of kn.
template <class Buffer, class T>
Buffer columnPanels(const T* kn, int64_t K, int64_t ld, int64_t first, int64_t count) {
  const int64_t panels = panelCount(count);
  Buffer out;
  resizePrefaulted(out, static_cast<size_t>(panels * K * kPanelWidth), std::nullopt);  // every value written below
#pragma omp parallel for schedule(dynamic) if (panels > 1 && count * K >= (int64_t{1} << 16))
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t c0 = first + p * kPanelWidth, cols = std::min(kPanelWidth, first + count - c0);
    for (int64_t k = 0; k < K; ++k) {
      auto* to = &out[(p * K + k) * kPanelWidth];
      std::copy_n(&kn[k * ld + c0], cols, to);
      std::fill(to + cols, to + kPanelWidth, 0);
    }
  }
  return out;
}

void requireRows(const Weights& w, const char* what) {
  if (w.panels) throw std::logic_error(std::string(what) + ": weights already in panels");
  if (w.quant.type) throw std::logic_error(std::string(what) + ": ggml blocks are not re-laid out");
}

}  // namespace

int64_t panelCount(int64_t N) { return (N + kPanelWidth - 1) / kPanelWidth; }

void panelOf(const float* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out) {
  panelData(w, ld, N, K, p, out, unchanged);
}
void panelOf(const uint16_t* w, int64_t ld, int64_t N, int64_t K, int64_t p, float* out) {
  panelData(w, ld, N, K, p, out, widened);
}

// The panel's 64 rows dequantized a few blocks of columns at a time ([64, chunk], in cache),
// then laid across the panel (row j is column j) a whole panel row of 64 values at a time. Row
// by row over all of K, every value went to another cache line (two thirds of a generated
// token's time on a Q4_K_M file).
void panelOf(const QuantRows& w, int64_t N, int64_t K, int64_t p, float* out) {
  constexpr int64_t kChunkValues = 256;  // a K-quant block; smaller blocks several at once
  const int64_t n0 = p * kPanelWidth, cols = std::min(kPanelWidth, N - n0), block = w.type->block;
  const int64_t chunk = std::max<int64_t>(block, kChunkValues / block * block);
  thread_local std::vector<float> rows;  // [64, chunk]
  rows.resize(static_cast<size_t>(kPanelWidth * chunk));
  for (int64_t k0 = 0; k0 < K; k0 += chunk) {
    const int64_t width = std::min(chunk, K - k0);
    const uint64_t offset = static_cast<uint64_t>(k0 / block) * w.type->bytes;
    for (int64_t j = 0; j < cols; ++j) dequantizeRow(*w.type, w.row(n0 + j) + offset, &rows[j * chunk], width);
    for (int64_t k = 0; k < width; ++k) {
      float* to = out + (k0 + k) * kPanelWidth;
      for (int64_t j = 0; j < cols; ++j) to[j] = rows[j * chunk + k];
      std::fill(to + cols, to + kPanelWidth, 0.0f);
    }
  }
}

Weights quantizedWeights(const GgmlTypeInfo& type, const uint8_t* data, int64_t N, int64_t K,
                         std::shared_ptr<const void> owner, std::vector<int64_t> row_map) {
  Weights w;
  w.shape = {N, K};
  w.quant = {&type, data, ggmlRowBytes(type, K), nullptr, N};
  w.owner = std::move(owner);
  if (!row_map.empty()) {
    w.row_map = std::make_shared<const std::vector<int64_t>>(std::move(row_map));
    w.quant.row_map = w.row_map->data();
    w.quant.span_rows = *std::max_element(w.row_map->begin(), w.row_map->end()) + 1;
  }
  return w;
}

uint64_t Weights::bytes() const {
  const uint64_t quant_bytes = quant.type ? static_cast<uint64_t>(dim(0)) * quant.row_bytes : 0;
  return f32.size() * sizeof(float) + bf16.size() * sizeof(uint16_t) + quant_bytes;
}

void packPanels(Weights& w) {
  if (w.quant.type) return;  // dequantized a panel at a time by the row GEMM
  requireRows(w, "packPanels");
  if (w.shape.size() != 2) throw std::logic_error("packPanels: not a matrix");
  const int64_t N = w.dim(0), K = w.dim(1);
  w.f32 = packedData(w.f32, N, K);
  w.bf16 = packedData(w.bf16, N, K);
  w.panels = true;
}

Weights panelsOfColumns(const Weights& kn, int64_t first, int64_t count) {
  requireRows(kn, "panelsOfColumns");
  if (!kn.bf16.empty()) return panelsOfColumns(kn.bf16.data(), kn.dim(0), kn.dim(1), first, count);
  return panelsOfColumns(kn.f32.data(), kn.dim(0), kn.dim(1), first, count);
}

namespace {

template <class T>
Weights columnsInPanels(const T* kn, int64_t K, int64_t ld, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > ld) throw std::logic_error("panelsOfColumns: columns out of range");
  Weights w;
  w.shape = {count, K};
  if constexpr (std::is_same_v<T, float>) {
    w.f32 = columnPanels<FloatBuffer>(kn, K, ld, first, count);
  } else {
    w.bf16 = columnPanels<Bf16Buffer>(kn, K, ld, first, count);
  }
  w.panels = true;
  return w;
}

}  // namespace

Weights panelsOfColumns(const float* kn, int64_t K, int64_t ld, int64_t first, int64_t count) {
  return columnsInPanels(kn, K, ld, first, count);
}

Weights panelsOfColumns(const uint16_t* kn, int64_t K, int64_t ld, int64_t first, int64_t count) {
  return columnsInPanels(kn, K, ld, first, count);
}

void packPanelsFrom(const uint16_t* rows, int64_t N, int64_t K, Weights& w) {
  w.shape = {N, K};
  w.f32.clear();
  w.bf16 = Bf16Buffer();
  resizePrefaulted(w.bf16, static_cast<size_t>(panelCount(N) * K * kPanelWidth), std::nullopt);  // packAll writes all
  packAll(rows, N, K, w.bf16.data());
  w.panels = true;
}

float bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

float Weights::at(int64_t i) const {
  if (quant.type) {
    const int64_t K = dim(1);
    std::vector<float> row(static_cast<size_t>(K));
    rowInto(i / K, row.data());
    return row[i % K];
  }
  if (panels) {  // element (n, k) of [N, K]
    const int64_t K = dim(1), n = i / K, k = i % K;
    i = (n / kPanelWidth * K + k) * kPanelWidth + n % kPanelWidth;
  }
  return f32.empty() ? bf16ToFloat(bf16[i]) : f32[i];
}

void Weights::rowInto(int64_t n, float* out) const {
  const int64_t K = dim(1);
  if (quant.type) {
    dequantizeRow(*quant.type, quant.row(n), out, K);
    return;
  }
  if (panels) {
    for (int64_t k = 0; k < K; ++k) out[k] = at(n * K + k);
    return;
  }
  if (!f32.empty()) {
    std::copy_n(&f32[n * K], K, out);
    return;
  }
  for (int64_t k = 0; k < K; ++k) out[k] = bf16ToFloat(bf16[n * K + k]);
}

WeightRows Weights::rows() const {
  const int64_t N = shape.size() == 2 ? dim(0) : 1, K = shape.size() == 2 ? dim(1) : dim(0);
  return {f32.empty() ? nullptr : f32.data(), bf16.empty() ? nullptr : bf16.data(), N, K, 0, panels, quant};
}

Weights rowsOf(const Weights& w, int64_t first, int64_t count) {
  requireRows(w, "rowsOf");
  const int64_t C = w.shape.size() == 2 ? w.dim(1) : 1;
  Weights out;
  out.shape = w.shape.size() == 2 ? Shape{count, C} : Shape{count};
  out.f32 = rowData(w.f32, C, first, count);
  out.bf16 = rowData(w.bf16, C, first, count);
  return out;
}

}  // namespace attnscope
