// GGUF reader (tensor/gguf.h): the fuzzer input is one whole file. Every error must name the
// file; every tensor the parser accepts lies inside the input and, when of a readable type,
// is dequantized row by row (its values at most 32 times its bytes: F32's 4 bytes a value,
// IQ4_NL's 0.56).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tensor/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "fuzz/model.gguf";
  attnscope::GgufHeader header;
  try {
    header = attnscope::parseGguf(data, size, path);
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), path);
    return 0;
  }
  std::vector<float> row;
  for (const auto& t : header.tensors) {
    if (header.data_start + t.offset + t.bytes > size) std::abort();  // the parser must have refused it
    if (!t.type->readable) continue;
    const int64_t n = t.dims[0];
    const uint64_t row_bytes = attnscope::ggmlRowBytes(*t.type, n);
    row.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < t.rows(); ++r)
      attnscope::dequantizeRow(*t.type, data + header.data_start + t.offset + r * row_bytes, row.data(), n);
  }
  return 0;
}
