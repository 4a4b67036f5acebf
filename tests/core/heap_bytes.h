// Bytes the process holds from malloc right now (glibc mallinfo2: small blocks plus mmapped
// ones), for tests that check a step allocates no copy of something large.
#pragma once

#include <malloc.h>

#include <cstddef>

namespace attnscope::testing {

inline size_t heapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Bytes held now beyond `before` (0 when fewer: a sanitizer's allocator, which glibc does not see).
inline size_t heapGrowthSince(size_t before) {
  const size_t now = heapBytesInUse();
  return now > before ? now - before : 0;
}

}  // namespace attnscope::testing
