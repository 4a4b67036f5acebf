// ggml's tensor types (the GGUF file's tensor data, tensor/gguf.h): each type's block size and
// bytes per block, and the dequantization of the types attnscope reads, following ggml's
// published block layouts (ggml-quants.c; gguf-py's quants.py) bit for bit: every value is
// the float32 that gguf-py's `quants.dequantize` gives for the same bytes.
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

struct GgmlTypeInfo {
  uint32_t id;         // ggml_type
  const char* name;    // "Q4_K"
  int64_t block;       // values per block
  uint64_t bytes;      // bytes per block
  bool readable;       // attnscope dequantizes it
};

// ggml's kvalues_iq4nl: IQ4_NL's and IQ4_XS's 16 levels (aligned for a vector load).
alignas(16) inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                      1,    13,   25,  38,  53,  69,  89,  113};

// The row of type `id`; null for an id ggml does not define.
const GgmlTypeInfo* ggmlType(uint32_t id);
// "F32, F16, BF16, Q8_0, ..." for messages.
std::string readableGgmlTypes();
// Bytes of a row of n values (n a multiple of the type's block).
inline uint64_t ggmlRowBytes(const GgmlTypeInfo& t, int64_t n) { return static_cast<uint64_t>(n / t.block) * t.bytes; }

// dst[0, n) = the n values stored in src (n a multiple of the block; a readable type).
void dequantizeRow(const GgmlTypeInfo& type, const uint8_t* src, float* dst, int64_t n);

}  // namespace attnscope
