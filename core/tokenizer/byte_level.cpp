#include "tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

std::array<char32_t, 256> byteChars() {
  std::array<char32_t, 256> chars{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    chars[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return chars;
}

const std::array<std::string, 256>& byteStrings() {
  static const std::array<std::string, 256> strings = [] {
    std::array<std::string, 256> out;
    const auto chars = byteChars();
    for (size_t b = 0; b < 256; ++b) out[b] = encodeUtf8(chars[b]);
    return out;
  }();
  return strings;
}

}  // namespace

std::string bytesToUnicode(const std::string& text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (const char c : text) out += byteStrings()[static_cast<unsigned char>(c)];
  return out;
}

std::optional<std::string> unicodeToBytes(const std::string& piece) {
  static const std::unordered_map<char32_t, char> bytes = [] {
    std::unordered_map<char32_t, char> out;
    const auto chars = byteChars();
    for (size_t b = 0; b < 256; ++b) out[chars[b]] = static_cast<char>(b);
    return out;
  }();
  std::string out;
  for (const char32_t c : decodeUtf8(piece)) {
    const auto it = bytes.find(c);
    if (it == bytes.end()) return std::nullopt;
    out += it->second;
  }
  return out;
}

}  // namespace attnscope::tok
