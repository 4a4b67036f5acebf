// Hugging Face config.json reader (both spellings, every family of the registry): the
// fuzzer input is the file's text. Every error must name config.json; an accepted config
// must be self-consistent (heads divisible by kv heads, one window per layer, RoPE
// frequencies that fit the head, fused q/k/v only when the heads fill the model width).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "fuzz/config.json";
  attnscope::ModelConfig c;
  try {
    c = attnscope::parseHfConfig(std::string(reinterpret_cast<const char*>(data), size), path);
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), path);
    return 0;
  }
  if (!c.family || c.heads % c.kv_heads != 0 || static_cast<int64_t>(c.window.size()) != c.n_layers ||
      static_cast<int64_t>(c.rotary.size()) != c.n_layers ||
      2 * static_cast<int64_t>(c.rope_inv_freq.size()) > c.head_dim ||
      (!c.layer_rope.empty() && static_cast<int64_t>(c.layer_rope.size()) != c.n_layers) ||
      (c.family->fused_qkv != attnscope::FusedQkv::None && c.heads * c.head_dim != c.hidden))
    std::abort();
  return 0;
}
