// Plain row-major tensors that cross every layer boundary (core -> CLI, app, tests).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace attnscope {

using Shape = std::vector<int64_t>;

// Bad user input (files, shapes, settings). The message is one line that names the
// problem; callers print it as is and exit 1 (CLI) or show it in the panel (app).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int64_t numel(const Shape& shape);
std::string shapeToString(const Shape& shape);  // "[2, 4, 100]"

// Tensor (and weight) storage: a std::vector whose resize(n) and FloatBuffer(n) leave the new
// values unset (default-initialised), so that fresh maps are not zeroed twice (the kernel's
// fresh pages are zero) or filled on one thread; resize(n, value) fills as usual.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using FloatBuffer = std::vector<float, DefaultInitAllocator<float>>;
using Bf16Buffer = std::vector<uint16_t, DefaultInitAllocator<uint16_t>>;  // BF16 bit patterns
// Values against a plain vector's (readers and tests that hold std::vector<float>).
inline bool operator==(const FloatBuffer& a, const std::vector<float>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}
inline bool operator==(const std::vector<float>& a, const FloatBuffer& b) { return b == a; }
inline bool operator!=(const FloatBuffer& a, const std::vector<float>& b) { return !(a == b); }
inline bool operator!=(const std::vector<float>& a, const FloatBuffer& b) { return !(b == a); }

// Resizes data to n values: new ones = fill (on every OpenMP thread when they are many), or
// left unset for a caller that writes them all (fill nullopt). When that needs new storage of
// 1 MiB or more, its pages are faulted in by madvise(MADV_POPULATE_WRITE), 2 MiB pieces on
// every OpenMP thread, before they are written: on the virtual machines measured here,
// touching fresh memory page by page cost 3 ms per MiB on a quiet machine and up to 35 ms per
// MiB under load, about three times the one call (and the pieces halve that again on two
// cores). New storage holds `capacity` values when that is more than n (room to grow without
// moving); only the first n are faulted in, the room's pages as growth reaches them.
void resizePrefaulted(FloatBuffer& data, size_t n, std::optional<float> fill = 0.0f, size_t capacity = 0);
void resizePrefaulted(Bf16Buffer& data, size_t n, std::optional<uint16_t> fill = 0, size_t capacity = 0);

// Positions a growing buffer leaves room for (regrid, and the traces' per-position rows), so
// typing at the end or generating grows in place.
constexpr int64_t kGrowthRoom = 64;

// Rows [0, keep) of each of the N blocks of v, laid out [N, oldT, oldW], moved in place to
// the layout [N, T, W]; a kept row's new columns [oldW, W) get `fill`. Rows from keep on
// are left for the caller to write. New storage leaves room for kGrowthRoom more
// positions.
void regrid(FloatBuffer& v, int64_t N, int64_t oldT, int64_t oldW, int64_t T, int64_t W, int64_t keep, float fill);

// float32 tensor, row-major (C order). data.size() == numel(shape).
struct Tensor {
  Shape shape;
  FloatBuffer data;

  Tensor() = default;
  explicit Tensor(Shape s, float fill = 0.0f) : shape(std::move(s)) { resizePrefaulted(data, numel(shape), fill); }
  bool empty() const { return data.empty(); }
  int64_t dim(size_t axis) const { return shape.at(axis); }
};

// bool tensor stored one byte per element (0 / 1), row-major.
struct BoolTensor {
  Shape shape;
  std::vector<uint8_t> data;

  BoolTensor() = default;
  explicit BoolTensor(Shape s, bool fill = false) : shape(std::move(s)), data(numel(shape), fill ? 1 : 0) {}
  bool empty() const { return data.empty(); }
};

// Rows [first, first + count) of a [R, C] tensor (or elements of a vector), copied.
Tensor rows(const Tensor& t, int64_t first, int64_t count);

}  // namespace attnscope
