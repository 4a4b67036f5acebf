// .npy reader: any bytes give an NpyArray or an InputError naming the file, never a crash,
// an allocation larger than the file allows, or a sanitizer report.
#include <cstdint>

#include "fuzz_util.h"
#include "tensor/npy.h"

namespace {
attnscope::fuzz::Scratch scratch;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (scratch.fresh() / "x.npy").string();
  attnscope::fuzz::Scratch::write(path, data, size);
  // Each typed reader has its own checks on top of readNpy's.
  try { attnscope::readNpy(path); } catch (const attnscope::InputError&) {}
  try { attnscope::readNpyFloat(path); } catch (const attnscope::InputError&) {}
  try { attnscope::readNpyBool(path); } catch (const attnscope::InputError&) {}
  try { attnscope::readNpyInt(path); } catch (const attnscope::InputError&) {}
  return 0;
}
