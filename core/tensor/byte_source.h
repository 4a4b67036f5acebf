// Where .npy bytes come from: a file, or a member of a .npz archive (tensor/npz.cpp).
// Internal to core/tensor.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/npy.h"

namespace attnscope {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;  // total bytes
  // Reads exactly n more bytes into dst; false when the source ends early or fails
  // (then error() says why, "" meaning it ended early).
  virtual bool read(char* dst, uint64_t n) = 0;
  virtual std::string error() const { return ""; }
};

// Parses an .npy stream; `name` prefixes every message ("dir/a.npz: attentions.npy").
Tensor readNpyFloatFrom(const std::string& name, ByteSource& source, const NpyShapeCheck& check);

}  // namespace attnscope
