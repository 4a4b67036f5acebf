#include "tensor/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

// Linux 5.14; older kernels answer EINVAL and the pages fault in one by one as before.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace attnscope {

namespace {

template <class T>
void resizeBuffer(std::vector<T, DefaultInitAllocator<T>>& data, size_t n, std::optional<T> fill, size_t capacity) {
  constexpr size_t kPrefaultBytes = size_t{1} << 20;
  const size_t old = data.size();
  if (n > data.capacity() && n * sizeof(T) >= kPrefaultBytes) {
    data.reserve(std::max(n, capacity));
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data.data()) + page - 1) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data.data() + n) + page - 1) & ~(page - 1);
    // 2 MiB pieces on every thread: the faults of a piece take the kernel's time on one core.
    constexpr uintptr_t kPiece = uintptr_t{2} << 20;
    const int64_t pieces = end > begin ? static_cast<int64_t>((end - begin + kPiece - 1) / kPiece) : 0;
#pragma omp parallel for schedule(dynamic) if (pieces > 1)
    for (int64_t p = 0; p < pieces; ++p) {
      const uintptr_t from = begin + static_cast<uintptr_t>(p) * kPiece;
      madvise(reinterpret_cast<void*>(from), std::min(kPiece, end - from), MADV_POPULATE_WRITE);
    }
  }
  data.resize(n);  // the new values unset (DefaultInitAllocator)
  if (!fill || n <= old) return;
  constexpr int64_t kPieceValues = int64_t{1} << 20;
  const int64_t count = static_cast<int64_t>(n - old), pieces = (count + kPieceValues - 1) / kPieceValues;
  T* first = data.data() + old;
#pragma omp parallel for if (pieces > 1)
  for (int64_t p = 0; p < pieces; ++p)
    std::fill(first + p * kPieceValues, first + std::min(count, (p + 1) * kPieceValues), *fill);
}

}  // namespace

void resizePrefaulted(FloatBuffer& data, size_t n, std::optional<float> fill, size_t capacity) {
  resizeBuffer(data, n, fill, capacity);
}

void resizePrefaulted(Bf16Buffer& data, size_t n, std::optional<uint16_t> fill, size_t capacity) {
  resizeBuffer(data, n, fill, capacity);
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string shapeToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Tensor rows(const Tensor& t, int64_t first, int64_t count) {
  const int64_t C = t.shape.size() == 2 ? t.dim(1) : 1;
  Tensor out(t.shape.size() == 2 ? Shape{count, C} : Shape{count});
  std::copy(t.data.begin() + first * C, t.data.begin() + (first + count) * C, out.data.begin());
  return out;
}

}  // namespace attnscope
