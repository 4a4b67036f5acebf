// Hugging Face safetensors files, memory-mapped: FOLDER/model.safetensors, or the shards
// that FOLDER/model.safetensors.index.json's "weight_map" lists.
//
// A file: an 8-byte little-endian header length n, n bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// data; offsets count from the end of the header. Tensors are little-endian, C order.
// F32, F16 and BF16 tensors are read (converted to float32 when read); every other dtype of
// the format is validated (its offsets) but cannot be read. Every problem is one InputError
// line naming the file (and the tensor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tensor/weights.h"

namespace attnscope {

struct SafetensorsEntry {
  std::string dtype;   // "F32", "F16", "BF16", "I64", ...
  Shape shape;
  uint64_t begin = 0;  // data_offsets, relative to the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t data_start = 0;                         // 8 + header length
  std::map<std::string, SafetensorsEntry> tensors;  // by name (no "__metadata__")
};

// Parses and validates a whole file's bytes: length field, JSON, dtypes, shapes, offsets
// within the data section and not overlapping. `path` prefixes every message.
SafetensorsHeader parseSafetensorsHeader(const uint8_t* bytes, uint64_t size, const std::string& path);

// Bytes per element of a safetensors dtype; 0 when the format has no such dtype.
uint64_t safetensorsDtypeBytes(const std::string& dtype);

// float32 values of one entry of a parsed file (F32, F16 or BF16; InputError otherwise, or
// for a NaN or infinite value), written to out[numel].
void convertSafetensor(const uint8_t* file_bytes, const SafetensorsHeader& header, const std::string& name,
                       const std::string& path, float* out);

class MappedFile;  // tensor/mapped_file.h

// Every tensor of a model folder's safetensors file(s). open() reads only the headers
// (shapes and dtypes are known before any data is touched: a caller can refuse a folder
// that cannot fit memory first); mapData() maps the files read-only and checks that every
// tensor's data lies inside its file (a truncated file is refused there).
class SafetensorsFolder {
 public:
  // FOLDER/model.safetensors.index.json when present, else FOLDER/model.safetensors.
  // A folder with pytorch_model.bin instead: InputError saying pickles are not read and how
  // to write safetensors.
  static SafetensorsFolder open(const std::string& folder);
  void mapData();  // before read()
  // mapData's check without mapping: every tensor's data lies inside its file (InputError
  // "truncated: N bytes, but its header says M ..." otherwise).
  void checkSizes() const;
  SafetensorsFolder();
  ~SafetensorsFolder();
  SafetensorsFolder(SafetensorsFolder&&) noexcept;
  SafetensorsFolder& operator=(SafetensorsFolder&&) noexcept;

  bool has(const std::string& name) const;
  const SafetensorsEntry& entry(const std::string& name) const;  // has(name) must hold
  std::string fileOf(const std::string& name) const;            // path of the file holding it
  std::string describe() const;  // "m/model.safetensors" or "m/model.safetensors.index.json"
  // float32 copy of a tensor; InputError naming the file and tensor when it is missing
  // (`why` says what needs it) or its shape differs from `shape`.
  Tensor read(const std::string& name, const Shape& shape, const std::string& why) const;
  // The same, BF16 kept as stored (tensor/weights.h); F32 and F16 as float32; a matrix in
  // the row GEMM's panels when `panels`.
  Weights readWeights(const std::string& name, const Shape& shape, const std::string& why, bool panels = false) const;
  // A stored [K, N] matrix (GPT-2's Conv1D weights, [in, out]) as W = its columns transposed,
  // split into consecutive column ranges of `counts` (summing to N), each in the row GEMM's
  // panels straight from the mapping (no float32 copy of the whole matrix first); F32 and
  // BF16 as stored, F16 widened.
  std::vector<Weights> readColumnPanels(const std::string& name, const Shape& shape, const std::string& why,
                                        const std::vector<int64_t>& counts) const;
  // Bytes a tensor takes once read: readWeights keeps BF16 at 2 bytes a value, read() widens to 4.
  uint64_t residentBytes(const std::string& name, bool keep_bf16) const;
  void checkShape(const std::string& name, const Shape& shape, const std::string& why) const;

 private:
  struct Shard;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, size_t> where_;  // tensor name -> shard index
  std::string describe_;
};

}  // namespace attnscope
