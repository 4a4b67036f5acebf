#include "tensor/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tensor/tensor.h"

namespace attnscope {

std::string readSmallFile(const std::string& path, size_t max_bytes, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw InputError(path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB, not " + what);
  }
  if (in.bad()) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  return text;
}

std::vector<std::string> readLines(const std::string& path, size_t max_bytes, const std::string& what) {
  std::istringstream in(readSmallFile(path, max_bytes, what));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

}  // namespace attnscope
