// Plain row-major tensors that cross every layer boundary (core -> CLI, app, tests).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
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

// Resizes data to n floats (new ones = fill). When that needs new storage of 4 MiB or more,
// its pages are faulted in by madvise(MADV_POPULATE_WRITE), 2 MiB pieces on every OpenMP
// thread, before they are written: on the virtual machines measured here, touching fresh
// memory page by page cost 3 ms per MiB on a quiet machine and up to 35 ms per MiB under
// load, about three times the one call (and the pieces halve that again on two cores).
// New storage holds `capacity` floats when that is more than n (room to grow without
// moving), all of them faulted in.
void resizePrefaulted(std::vector<float>& data, size_t n, float fill = 0.0f, size_t capacity = 0);

// float32 tensor, row-major (C order). data.size() == numel(shape).
struct Tensor {
  Shape shape;
  std::vector<float> data;

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

}  // namespace attnscope
