// Tests write Hugging Face folders by hand (no safetensors package on Debian): this writes
// the safetensors file of one, F32 only (8-byte little-endian header length, the JSON
// header padded with spaces to 8 bytes, then the raw data).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnscope {

using TensorShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// `path` holding `tensors` in order, element k of each = value(k); with_data false stops the
// file right after its header. Returns the data section's bytes (the float32 size).
inline uint64_t writeF32Safetensors(const std::filesystem::path& path, const TensorShapes& tensors,
                                    const std::function<float(int64_t)>& value, bool with_data = true) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 4 * n}}};
    for (int64_t k = 0; k < n; ++k) {
      const float x = value(k);
      data.append(reinterpret_cast<const char*>(&x), sizeof x);
    }
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream file(path, std::ios::binary);
  const uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) file.put(static_cast<char>((length >> (8 * i)) & 0xff));
  file << text;
  if (with_data) file << data;
  return data.size();
}

}  // namespace attnscope
