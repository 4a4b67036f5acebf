// .npz reader (libzip): any bytes give the array names and float32 arrays, or an InputError
// naming the archive, never a crash, a huge allocation or a sanitizer report.
#include <cstdint>

#include "fuzz_util.h"
#include "tensor/npz.h"

namespace {
attnscope::fuzz::Scratch scratch;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (scratch.fresh() / "x.npz").string();
  attnscope::fuzz::Scratch::write(path, data, size);
  std::vector<std::string> names;
  try {
    names = attnscope::npzArrayNames(path);
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), path);
    return 0;
  }
  names.push_back("missing");  // a name that is not there is an error too
  for (const std::string& name : names) {
    try {
      attnscope::readNpzFloat(path, name);
    } catch (const attnscope::InputError& e) {
      attnscope::fuzz::requireNamed(e.what(), path);
    }
  }
  return 0;
}
