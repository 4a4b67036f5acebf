// Test-only: a GGUF file as tensor/gguf.h reads it, for tests/cli/test_gguf_*.py.
// Usage: attnscope_gguf FILE.gguf [OUTDIR]
//   Prints one JSON object: {"version", "alignment", "data_start", "metadata": {key: value},
//   "tensors": [{"name", "dims", "type", "offset"}]}; with OUTDIR, writes each tensor
//   dequantized (tensor/ggml_quants.h) as OUTDIR/<index>.npy, shape outermost first.
//   Bad input: one line on stderr, exit 1.
#include <iostream>

#include <nlohmann/json.hpp>

#include "tensor/gguf.h"
#include "tensor/npy.h"

namespace {

nlohmann::json toJson(const attnscope::GgufValue& v) {
  using attnscope::GgufType;
  if (v.type == GgufType::Array) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : v.items) a.push_back(toJson(item));
    return a;
  }
  if (v.type == GgufType::String) return v.s;
  if (v.type == GgufType::Bool) return v.u != 0;
  if (v.isReal()) return v.f;
  if (v.u != 0) return v.u;
  return v.i;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: attnscope_gguf FILE.gguf [OUTDIR]\n";
    return 2;
  }
  try {
    const attnscope::GgufFile file(argv[1]);
    const auto& h = file.header();
    nlohmann::json out = {{"version", h.version}, {"alignment", h.alignment}, {"data_start", h.data_start}};
    out["metadata"] = nlohmann::json::object();
    for (const auto& [key, value] : h.metadata) out["metadata"][key] = toJson(value);
    out["tensors"] = nlohmann::json::array();
    for (size_t i = 0; i < h.tensors.size(); ++i) {
      const auto& t = h.tensors[i];
      out["tensors"].push_back({{"name", t.name}, {"dims", t.dims}, {"type", t.type->name}, {"offset", t.offset}});
      if (argc == 3) attnscope::writeNpy(std::string(argv[2]) + "/" + std::to_string(i) + ".npy", file.readTensor(t));
    }
    std::cout << out.dump() << "\n";
  } catch (const attnscope::InputError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
