// NumPy .npy reading and writing (format 1.0/2.0/3.0, little-endian, C order).
#pragma once

#include <functional>
#include <string>

#include "tensor/tensor.h"

namespace attnscope {

enum class NpyDtype { Float16, Float32, Float64, Bool, Int32, Int64 };

struct NpyArray {
  NpyDtype dtype = NpyDtype::Float32;
  Shape shape;
  std::vector<double> values;  // every element, converted to double, row-major
};

// Throws InputError naming the file: "query.npy: Fortran order is not supported", ...
NpyArray readNpy(const std::string& path);
// Called with an array's shape once its header is read, before its data is: throw an
// InputError to refuse it (wrong rank, too large for memory) without reading the data.
using NpyShapeCheck = std::function<void(const Shape&)>;

// float16/float32/float64 -> float32; NaN/Inf rejected naming the index.
Tensor readNpyFloat(const std::string& path, const NpyShapeCheck& check = {});
BoolTensor readNpyBool(const std::string& path);  // bool only
std::vector<int64_t> readNpyInt(const std::string& path);  // int32/int64, 1-D

// Written to a temporary name in the same folder, then renamed: no partial file on failure.
void writeNpy(const std::string& path, const Tensor& tensor);       // float32
void writeNpy(const std::string& path, const BoolTensor& tensor);   // bool
void writeNpyInt64(const std::string& path, const Shape& shape, const std::vector<int64_t>& values);
// A float32 array too large to hold whole, written chunk by chunk (atomically too):
// next(chunk) fills chunk with the next values in row-major order and returns false when
// none are left; logic_error (and no file) when the values do not fill the shape.
void writeNpyStream(const std::string& path, const Shape& shape, const std::function<bool(std::vector<float>&)>& next);

// Writes bytes to `path` atomically (temp file + rename). Throws InputError on failure.
void writeFileAtomic(const std::string& path, const std::string& bytes);

}  // namespace attnscope
