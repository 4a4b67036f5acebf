// A file mapped read-only (safetensors shards, GGUF files). Internal to core/tensor and the
// weights that point into a mapping (tensor/weights.h keeps it alive through a shared_ptr).
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

class MappedFile {
 public:
  // InputError "PATH: cannot open (...)", "not a regular file" or "cannot map (...)".
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Bytes [begin, end) converted: their whole pages leave the process's memory (a private
  // read-only mapping reads them again from the file if touched), so a load never holds
  // the file and its float32 copy at once.
  void release(uint64_t begin, uint64_t end) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace attnscope
