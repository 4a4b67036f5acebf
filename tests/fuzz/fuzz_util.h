// Shared by the fuzz targets: fuzzer bytes as files in a private temporary folder, so
// that the readers are fuzzed through the same path-based API the app and CLI use.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
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

// A folder of files from one fuzzer input: "@@@ NAME\n<bytes>" sections, each starting at a
// line "@@@ NAME". Each section whose NAME is a plain file name that `wanted` accepts is
// written as DIR/NAME; the others are skipped.
inline void writeSections(const std::string& input, const std::filesystem::path& dir,
                          const std::function<bool(const std::string&)>& wanted) {
  const std::string marker = "@@@ ";
  size_t at = input.rfind(marker, 0) == 0 ? 0 : input.find("\n" + marker);
  while (at != std::string::npos) {
    const size_t name_start = at + (input[at] == '\n' ? 1 : 0) + marker.size();
    const size_t name_end = input.find('\n', name_start);
    if (name_end == std::string::npos) return;
    const std::string name = input.substr(name_start, name_end - name_start);
    const size_t next = input.find("\n" + marker, name_end);
    const std::string body = input.substr(name_end + 1, next == std::string::npos ? std::string::npos : next - name_end - 1);
    const bool plain = !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                       name.find('\0') == std::string::npos;
    if (plain && wanted(name)) Scratch::write(dir / name, reinterpret_cast<const uint8_t*>(body.data()), body.size());
    at = next;
  }
}

// The InputError contract: the message names the file or folder it is about.
inline void requireNamed(const std::string& message, const std::string& subject) {
  if (message.find(subject) == std::string::npos) {
    std::fprintf(stderr, "error without the file's name: %s\n", message.c_str());
    std::abort();
  }
}

}  // namespace attnscope::fuzz
