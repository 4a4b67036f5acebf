// Mask spec text (CLI --mask, settings "mask", bundle.json "mask"): parse, print, parse
// again, and build the masks for small sizes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "attention/mask.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The first two bytes pick the sizes, the rest is the spec.
  const int64_t L = 1 + data[0] % 9, S = 1 + data[1] % 9;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  attnscope::MaskSpec spec;
  try {
    spec = attnscope::MaskSpec::parse(text);
  } catch (const attnscope::InputError&) {
    return 0;
  }
  const std::string canonical = spec.toString();
  if (!(attnscope::MaskSpec::parse(canonical) == spec)) std::abort();  // round trip must hold
  spec.shortName();
  try {
    attnscope::buildMasks(spec, 2, L, S, {1, S}, {}, {});
  } catch (const attnscope::InputError&) {
  }
  return 0;
}
