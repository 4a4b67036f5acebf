// Shared by the fuzz targets: fuzzer bytes as files in a private temporary folder, so
// that the readers are fuzzed through the same path-based API the app and CLI use.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace attnscope::fuzz {

// One folder per fuzzing process, removed and recreated by fresh().
class Scratch {
 public:
  Scratch() : root_(std::filesystem::temp_directory_path() / ("attnscope-fuzz-" + std::to_string(::getpid()))) {}
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  // An empty folder.
  const std::filesystem::path& fresh() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    std::filesystem::create_directories(root_);
    return root_;
  }
  static void write(const std::filesystem::path& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }

 private:
  std::filesystem::path root_;
};

}  // namespace attnscope::fuzz
