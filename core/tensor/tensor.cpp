#include "tensor/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <omp.h>

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

// Rows [0, keep) of each of the N blocks of v, laid out [N, oldT, oldW], moved in place to
// the layout [N, T, W]; a kept row's new columns [oldW, W) get `fill`. Rows from keep on
// are left for the caller to write. Per-head vectors keep their width; maps [T, T] grow or
// shrink in both axes with T, so every row moves one way: up when growing, down otherwise.
// Growing, the rows (in source order, r = n keep + i) move last first; in parallel, each
// thread moves one chunk of them last first, after the rows at the start of each chunk that
// the chunk below overwrites (a row moves up by more than the one before it) are copied aside.
void regrid(FloatBuffer& v, int64_t N, int64_t oldT, int64_t oldW, int64_t T, int64_t W, int64_t keep, float fill) {
  const size_t size = static_cast<size_t>(N * T * W);
  const int64_t cols = std::min(oldW, W), rows = N * keep;
  auto src = [&](int64_t r) { return (r / keep * oldT + r % keep) * oldW; };
  auto dst = [&](int64_t r) { return (r / keep * T + r % keep) * W; };
  auto move = [&](int64_t r, const float* from) {
    float* to = v.data() + dst(r);
    if (to > from) {  // up: a plain loop, which ran these rows 1.3x as fast as glibc's memmove (measured)
      for (int64_t k = cols; k-- > 0;) to[k] = from[k];
    } else {
      std::memmove(to, from, static_cast<size_t>(cols) * sizeof(float));
    }
    std::fill(to + cols, to + W, fill);
  };
  const bool grows = T * W >= oldT * oldW;
  if (!grows) {
    for (int64_t r = 0; r < rows; ++r) move(r, v.data() + src(r));
    v.resize(size);
    return;
  }
  // New storage leaves room for kGrowthRoom more positions (reserved: its pages fault in as the maps
  // grow into them), so typing at the end or generating grows in place; otherwise every token
  // would move all maps into fresh memory, whose first touches cost more than the re-layout.
  const size_t room = static_cast<size_t>(N * (T + kGrowthRoom) * (W > oldW ? W + kGrowthRoom : W));
  if (size > v.size()) resizePrefaulted(v, size, std::nullopt, room);  // the moves and the caller write every value
  const int64_t chunks = rows * cols >= (int64_t{1} << 20) ? std::min<int64_t>(omp_get_max_threads(), rows) : 1;
  std::vector<int64_t> bounds(static_cast<size_t>(chunks + 1)), aside_rows(static_cast<size_t>(chunks), 0);
  for (int64_t c = 0; c <= chunks; ++c) bounds[c] = rows * c / chunks;
  std::vector<std::vector<float>> aside(static_cast<size_t>(chunks));
  bool parallel = chunks > 1;
  for (int64_t c = 1; c < chunks && parallel; ++c) {
    const int64_t written_below = dst(bounds[c] - 1) + W;  // the end of chunk c - 1's last row
    int64_t r = bounds[c];
    while (r < bounds[c + 1] && src(r) < written_below) ++r;
    parallel = r < bounds[c + 1];  // chunks much longer than a row's move, or one thread
    aside_rows[c] = r - bounds[c];
    for (int64_t k = bounds[c]; k < r; ++k) aside[c].insert(aside[c].end(), v.data() + src(k), v.data() + src(k) + cols);
  }
  if (!parallel) {
    for (int64_t r = rows - 1; r >= 0; --r) move(r, v.data() + src(r));
  } else {
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(chunks))
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t r = bounds[c + 1] - 1; r >= bounds[c]; --r)
        move(r, r - bounds[c] < aside_rows[c] ? &aside[c][(r - bounds[c]) * cols] : v.data() + src(r));
  }
  v.resize(size);
}

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
