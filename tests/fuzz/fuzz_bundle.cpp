// Bundle loader: a folder of .npy files, bundle.json and token lists, built from one
// fuzzer input (see splitSections), then loaded and, when small, run through attention.
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

// The input is "@@@ NAME\n<bytes>" sections, each starting at a line "@@@ NAME"; NAME is
// one of kNames (others are skipped). Writes each section as DIR/NAME.
void splitSections(const std::string& input, const std::filesystem::path& dir) {
  const std::string marker = "@@@ ";
  size_t at = input.rfind(marker, 0) == 0 ? 0 : input.find("\n" + marker);
  while (at != std::string::npos) {
    const size_t name_start = at + (input[at] == '\n' ? 1 : 0) + marker.size();
    const size_t name_end = input.find('\n', name_start);
    if (name_end == std::string::npos) return;
    const std::string name = input.substr(name_start, name_end - name_start);
    const size_t next = input.find("\n" + marker, name_end);
    const std::string body = input.substr(name_end + 1, next == std::string::npos ? std::string::npos : next - name_end - 1);
    for (const char* known : kNames) {
      if (name == known)
        attnscope::fuzz::Scratch::write(dir / name, reinterpret_cast<const uint8_t*>(body.data()), body.size());
    }
    at = next;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = scratch.fresh();
  splitSections(std::string(reinterpret_cast<const char*>(data), size), dir);
  attnscope::Bundle bundle;
  try {
    bundle = attnscope::loadBundle(dir.string(), 8, 0);
  } catch (const attnscope::InputError& e) {
    if (std::string(e.what()).find(dir.string()) == std::string::npos) std::abort();  // must name the file
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
