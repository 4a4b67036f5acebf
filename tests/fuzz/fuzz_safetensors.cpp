// Safetensors header parser and tensor conversion: the fuzzer input is one whole file
// (8-byte length, JSON header, data). Every error must name the file; every tensor the
// header accepts in a readable dtype is converted (its bytes lie inside the input, so the
// output is at most twice the input's size).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "fuzz/model.safetensors";
  attnscope::SafetensorsHeader header;
  try {
    header = attnscope::parseSafetensorsHeader(data, size, path);
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), path);
    return 0;
  }
  std::vector<float> out;
  for (const auto& [name, entry] : header.tensors) {
    if (header.data_start + entry.end > size) std::abort();  // the parser must have refused it
    out.resize(static_cast<size_t>(attnscope::numel(entry.shape)));
    try {
      attnscope::convertSafetensor(data, header, name, path, out.data());
    } catch (const attnscope::InputError& e) {
      attnscope::fuzz::requireNamed(e.what(), path);
    }
  }
  return 0;
}
