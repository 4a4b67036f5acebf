// Built with -ffp-contract=off (core/CMakeLists.txt): each product and sum is rounded on its
// own, as NumPy computes gguf-py's dequantization, so the bits equal its float32 values.
#include "tensor/ggml_quants.h"

#include <cstring>
#include <iterator>

#include <Eigen/Core>

namespace attnscope {
namespace {

constexpr int64_t kQK = 256;  // values per K-quant super-block

// Every type ggml defines (ggml.h's ggml_type, gguf-py's GGML_QUANT_SIZES); the readable ones
// are the list.
constexpr GgmlTypeInfo kTypes[] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},        {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, true},       {6, "Q5_0", 32, 22, true},     {7, "Q5_1", 32, 24, true},
    {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},    {10, "Q2_K", 256, 84, true},
    {11, "Q3_K", 256, 110, true},    {12, "Q4_K", 256, 144, true},  {13, "Q5_K", 256, 176, true},
    {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, false}, {16, "IQ2_XXS", 256, 66, false},
    {17, "IQ2_XS", 256, 74, false},  {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, true},    {21, "IQ3_S", 256, 110, false}, {22, "IQ2_S", 256, 82, false},
    {23, "IQ4_XS", 256, 136, true},  {24, "I8", 1, 1, false},       {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},        {27, "I64", 1, 8, false},      {28, "F64", 1, 8, false},
    {29, "IQ1_M", 256, 56, false},   {30, "BF16", 1, 2, true},      {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false},   {39, "MXFP4", 32, 17, false},  {40, "NVFP4", 64, 36, false},
    {41, "Q1_0", 128, 18, false},    {42, "Q2_0", 64, 18, false},
};

float half(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

// Q4_0 / IQ4_NL: d, then 16 bytes: value j < 16 the low nibble of byte j, j + 16 its high one.
template <class Value>
void nibbles32(const uint8_t* b, float* y, Value value) {
  const float d = half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * value(b[2 + j] & 0x0F);
    y[j + 16] = d * value(b[2 + j] >> 4);
  }
}

void q4_0(const uint8_t* b, float* y) { nibbles32(b, y, [](int q) { return static_cast<float>(q - 8); }); }
void iq4_nl(const uint8_t* b, float* y) { nibbles32(b, y, [](int q) { return static_cast<float>(kIq4Values[q]); }); }

void q4_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(b[4 + j] & 0x0F) + m;
    y[j + 16] = d * static_cast<float>(b[4 + j] >> 4) + m;
  }
}

// Q5_0 / Q5_1: the fifth bit of value j is bit j of qh.
int fiveBits(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return low | static_cast<int>(((qh >> j) & 1u) << 4);
}

void q5_0(const uint8_t* b, float* y) {
  const float d = half(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(fiveBits(b + 6, qh, j) - 16);
}

void q5_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(fiveBits(b + 8, qh, j)) + m;
}

void q8_0(const uint8_t* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin. Value e = 128 a + 32 s
// + l is bits 2s of qs[32 a + l]; sub-block e / 16.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t *scales = b, *qs = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  for (int e = 0; e < kQK; ++e) {
    const int a = e / 128, s = e % 128 / 32, l = e % 32, sb = e / 16;
    const float dl = d * static_cast<float>(scales[sb] & 0x0F), ml = dmin * static_cast<float>(scales[sb] >> 4);
    y[e] = dl * static_cast<float>((qs[32 * a + l] >> (2 * s)) & 3) - ml;
  }
}

// Q3_K: hmask[32], qs[64], scales[12] (16 six-bit scales), d.
void q3_k(const uint8_t* b, float* y) {
  const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
  const float d = half(b + 108);
  float dl[16];
  for (int i = 0; i < 16; ++i) {
    const int low = (sc[i % 8] >> (4 * (i / 8))) & 0x0F, high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
    dl[i] = d * static_cast<float>(static_cast<int8_t>(low | (high << 4)) - 32);
  }
  for (int e = 0; e < kQK; ++e) {
    const int a = e / 128, s = e % 128 / 32, l = e % 32;
    const int low = (qs[32 * a + l] >> (2 * s)) & 3, bit = (hmask[l] >> (e / 32)) & 1;
    y[e] = dl[e / 16] * static_cast<float>(low - ((bit ^ 1) << 2));
  }
}

// Q4_K / Q5_K's eight six-bit scales and mins in 12 bytes.
void scaleMin(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[4 + j] & 63;
  } else {
    sc = (s[4 + j] & 0x0F) | ((s[j - 4] >> 2) & 0x30);
    m = (s[4 + j] >> 4) | ((s[j] >> 2) & 0x30);
  }
}

// Q4_K (high = null) / Q5_K: d, dmin, scales[12], [qh[32],] qs[128]. Sub-block sb = 2 a + t
// holds nibble t of qs[32 a + l]; Q5_K's fifth bit is bit sb of qh[l].
void kQuant45(const uint8_t* b, const uint8_t* high, const uint8_t* qs, float* y) {
  const float d = half(b), dmin = half(b + 2);
  for (int sb = 0; sb < 8; ++sb) {
    int sc, m;
    scaleMin(b + 4, sb, sc, m);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      int q = (qs[32 * (sb / 2) + l] >> (4 * (sb % 2))) & 0x0F;
      if (high) q |= ((high[l] >> sb) & 1) << 4;
      y[32 * sb + l] = dl * static_cast<float>(q) - ml;
    }
  }
}
void q4_k(const uint8_t* b, float* y) { kQuant45(b, nullptr, b + 16, y); }
void q5_k(const uint8_t* b, float* y) { kQuant45(b, b + 16, b + 48, y); }

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Value 128 a + 32 q + l (q = 0..3) takes its low nibble from ql[64 a + l + 32 (q % 2)] (high
// nibble when q >= 2) and its top two bits from qh[32 a + l] >> 2 q: four values per l, with
// shifts fixed per line, so that the loop over l vectorizes (ggml's dequantize_row_q6_K order).
void q6_k(const uint8_t* b, float* y) {
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int a = 0; a < 2; ++a) {
    const uint8_t *ql = b + 64 * a, *qh = b + 128 + 32 * a;
    const int8_t* sc = scales + 8 * a;
    float* out = y + 128 * a;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      out[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      out[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      out[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// IQ4_XS: d, scales_h (u16), scales_l[4], qs[128]; sub-block b's value 16 t + l is nibble t
// of qs[16 b + l].
void iq4_xs(const uint8_t* b, float* y) {
  const float d = half(b);
  uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, 2);
  const uint8_t *scales_l = b + 4, *qs = b + 8;
  for (int sb = 0; sb < 8; ++sb) {
    const int low = (scales_l[sb / 2] >> (4 * (sb % 2))) & 0x0F, high = (scales_h >> (2 * sb)) & 3;
    const float dl = d * static_cast<float>(static_cast<int8_t>(low | (high << 4)) - 32);
    for (int p = 0; p < 32; ++p)
      y[32 * sb + p] = dl * static_cast<float>(kIq4Values[(qs[16 * sb + p % 16] >> (4 * (p / 16))) & 0x0F]);
  }
}

void f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void f16(const uint8_t* b, float* y) { *y = half(b); }
void bf16(const uint8_t* b, float* y) {
  const uint32_t wide = static_cast<uint32_t>(b[0] | (b[1] << 8)) << 16;
  std::memcpy(y, &wide, 4);
}

// One block of each readable type into y[block].
using BlockFn = void (*)(const uint8_t*, float*);
struct Decoder {
  uint32_t id;
  BlockFn block;
};
constexpr Decoder kDecoders[] = {{0, &f32},    {1, &f16},    {30, &bf16},  {2, &q4_0},   {3, &q4_1},
                                 {6, &q5_0},   {7, &q5_1},   {8, &q8_0},   {10, &q2_k},  {11, &q3_k},
                                 {12, &q4_k},  {13, &q5_k},  {14, &q6_k},  {20, &iq4_nl}, {23, &iq4_xs}};

}  // namespace

const GgmlTypeInfo* ggmlType(uint32_t id) {
  for (const GgmlTypeInfo& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string readableGgmlTypes() {
  std::string out;
  for (const Decoder& d : kDecoders) out += (out.empty() ? "" : ", ") + std::string(ggmlType(d.id)->name);
  return out;
}

void dequantizeRow(const GgmlTypeInfo& type, const uint8_t* src, float* dst, int64_t n) {
  BlockFn fn = nullptr;
  for (const Decoder& d : kDecoders)
    if (d.id == type.id) fn = d.block;
  if (!fn) return;
  if (type.id == 0) {  // F32: the bytes as they are
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n / type.block; ++i) fn(src + i * type.bytes, dst + i * type.block);
}

}  // namespace attnscope
