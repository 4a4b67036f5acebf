// Tests write Hugging Face folders by hand (no safetensors package on Debian): this writes
// the safetensors file of one, F32 or BF16 (8-byte little-endian header length, the JSON
// header padded with spaces to 8 bytes, then the raw data).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnscope {

using TensorShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// `path` holding `tensors` in order, element k of each = value(k) (BF16: its upper 16 bits,
// exact for values with 8 significant bits); with_data false stops the file right after its
// header. Returns the data section's bytes.
inline uint64_t writeSafetensors(const std::filesystem::path& path, const TensorShapes& tensors,
                                 const std::function<float(int64_t)>& value, bool with_data = true,
                                 const std::string& dtype = "F32") {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  const size_t width = dtype == "BF16" ? 2 : 4;
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + width * n}}};
    for (int64_t k = 0; k < n; ++k) {
      const float x = value(k);
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      if (width == 2) bits >>= 16;
      data.append(reinterpret_cast<const char*>(&bits), width);  // little-endian host
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

inline uint64_t writeF32Safetensors(const std::filesystem::path& path, const TensorShapes& tensors,
                                    const std::function<float(int64_t)>& value, bool with_data = true) {
  return writeSafetensors(path, tensors, value, with_data, "F32");
}

}  // namespace attnscope
