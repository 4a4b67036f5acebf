// Attention-bundle loader: attentions.npy or .npz, token lists (tokens.txt, tokens.json), padding
// masks and bundle.json, built from
// one fuzzer input (see writeSections), then loaded and turned into a view model.
#include <algorithm>
#include <cstdint>
#include <string>

#include "config/attention_bundle.h"
#include "fuzz_util.h"

namespace {

attnscope::fuzz::Scratch scratch;

const char* const kNames[] = {"attentions.npy", "attentions.npz", "tokens.txt", "key_tokens.txt", "tokens.json",
                              "attention_mask.npy", "query_mask.npy", "bundle.json", "query.npy"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = scratch.fresh();
  attnscope::fuzz::writeSections(std::string(reinterpret_cast<const char*>(data), size), dir, [](const std::string& name) {
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
  });
  try {
    if (attnscope::bundleKind(dir.string()) != attnscope::BundleKind::Attentions) return 0;
    attnscope::ImportedMaps maps = attnscope::loadAttentionBundle(dir.string());
    attnscope::viewFromImported(std::move(maps));
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), dir.string());
  }
  return 0;
}
