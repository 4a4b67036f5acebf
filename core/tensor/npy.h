// NumPy .npy reading and writing (format 1.0/2.0/3.0, little-endian, C order).
#pragma once

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
Tensor readNpyFloat(const std::string& path);     // float16/32/64 -> float32; NaN/Inf rejected
BoolTensor readNpyBool(const std::string& path);  // bool only
std::vector<int64_t> readNpyInt(const std::string& path);  // int32/int64, 1-D

// Written to a temporary name in the same folder, then renamed: no partial file on failure.
void writeNpy(const std::string& path, const Tensor& tensor);       // float32
void writeNpy(const std::string& path, const BoolTensor& tensor);   // bool

// Writes bytes to `path` atomically (temp file + rename). Throws InputError on failure.
void writeFileAtomic(const std::string& path, const std::string& bytes);

}  // namespace attnscope
