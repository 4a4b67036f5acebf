// GGUF files (llama.cpp's model format), versions 2 and 3, memory-mapped.
//
// Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count; the
// metadata (string key, u32 value type, value; a string is u64 length + bytes, an array u32
// element type + u64 count + elements, arrays nest); the tensor infos (name, u32 n_dims,
// n_dims u64 dimensions innermost first, u32 ggml type, u64 offset into the data); then,
// aligned to general.alignment (default 32), the data. Every problem is one InputError
// naming the file and the byte offset or the key / tensor (parseGguf, GgufFile).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/ggml_quants.h"
#include "tensor/tensor.h"

namespace attnscope {

class MappedFile;

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
const char* ggufTypeName(GgufType type);

// One metadata value: an integer (u or i by its type), a real, a bool, a string or an array.
struct GgufValue {
  GgufType type = GgufType::U8;
  uint64_t u = 0;   // unsigned types and bool
  int64_t i = 0;    // signed types
  double f = 0.0;   // F32 / F64
  std::string s;
  GgufType elem = GgufType::U8;  // an array's element type
  std::vector<GgufValue> items;  // an array's elements
  bool isInteger() const;
  bool isReal() const { return type == GgufType::F32 || type == GgufType::F64; }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // as stored: innermost (a row's length) first
  const GgmlTypeInfo* type = nullptr;
  uint64_t offset = 0;  // from the data section's start
  uint64_t bytes = 0;
  int64_t rows() const;  // product of dims[1..]
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_start = 0;  // byte of the data section
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;  // file order
  std::map<std::string, size_t> by_name;
};

// Parses and validates a whole file's bytes: header, metadata, tensor infos, alignment,
// each tensor's data inside the file. `path` prefixes every message.
GgufHeader parseGguf(const uint8_t* bytes, uint64_t size, const std::string& path);

// A GGUF file, mapped read-only; the metadata accessors name the file and the key in errors.
class GgufFile {
 public:
  explicit GgufFile(const std::string& path);
  const std::string& path() const { return path_; }
  const GgufHeader& header() const { return header_; }
  uint64_t size() const;
  const GgufValue* find(const std::string& key) const;  // null when absent
  // A required key of the expected kind: "FILE: metadata key KEY is missing" / "is a TYPE, not ...".
  int64_t integer(const std::string& key) const;
  double real(const std::string& key) const;  // an integer is accepted too
  bool boolean(const std::string& key) const;
  const std::string& string(const std::string& key) const;
  const GgufValue& array(const std::string& key, GgufType elem) const;
  // Optional keys: the default when absent, InputError when present with the wrong kind.
  int64_t integer(const std::string& key, int64_t fallback) const;
  double real(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key, const std::string& fallback) const;

  const GgufTensorInfo* tensor(const std::string& name) const;  // null when absent
  const uint8_t* data(const GgufTensorInfo& t) const;           // its bytes in the mapping
  // InputError "FILE: tensor NAME has type IQ2_XXS, which attnscope does not read (it reads ...)".
  void requireReadable(const GgufTensorInfo& t) const;
  // A float32 copy, shape outermost first (for vectors and small tensors; matrices stay mapped).
  Tensor readTensor(const GgufTensorInfo& t) const;
  std::shared_ptr<const MappedFile> mapping() const { return file_; }
  [[noreturn]] void fail(const std::string& why) const;

 private:
  std::string path_;
  std::shared_ptr<const MappedFile> file_;
  GgufHeader header_;
};

}  // namespace attnscope
