// Bundle loader: a folder of .npy files, bundle.json and token lists, built from one
// fuzzer input (see writeSections), then loaded and, when small, run through attention.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/bundle.h"
#include "fuzz_util.h"

namespace {

attnscope::fuzz::Scratch scratch;

const char* const kNames[] = {"query.npy", "key.npy", "value.npy", "w_q.npy", "w_k.npy", "w_v.npy",
                              "w_o.npy", "b_q.npy", "b_k.npy", "b_v.npy", "b_o.npy", "attn_mask.npy",
                              "key_padding.npy", "valid_lens.npy", "tokens.txt", "key_tokens.txt",
                              "bundle.json"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = scratch.fresh();
  attnscope::fuzz::writeSections(std::string(reinterpret_cast<const char*>(data), size), dir, [](const std::string& name) {
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
  });
  attnscope::Bundle bundle;
  try {
    bundle = attnscope::loadBundle(dir.string(), 8, 0);
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), dir.string());
    return 0;
  }
  const attnscope::AttentionInputs& in = bundle.inputs;
  const int64_t B = in.query.dim(0), L = in.query.dim(1), S = in.key.dim(1), D = in.w_q.dim(0);
  if (attnscope::estimateTraceBytes(B, L, S, D, in.query.dim(2), in.key.dim(2), in.value.dim(2), 1) > (64u << 20))
    return 0;
  attnscope::AttentionOptions options;
  options.mask.padding = !in.valid_lens.empty() || !in.key_padding.empty();
  try {
    attnscope::runAttention(in, options);
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
