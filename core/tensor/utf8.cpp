#include "tensor/utf8.h"

namespace attnscope {

size_t decodeUtf8At(const std::string& text, size_t pos, uint32_t& cp) {
  const unsigned char c = text[pos];
  size_t len = 1;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
  else {
    cp = 0xFFFD;
    return 1;
  }
  if (pos + len > text.size()) {
    cp = 0xFFFD;
    return 1;
  }
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cont = text[pos + k];
    if ((cont & 0xC0) != 0x80) {
      cp = 0xFFFD;
      return 1;
    }
    cp = (cp << 6) | (cont & 0x3F);
  }
  return len;
}

std::vector<std::string> utf8Characters(const std::string& utf8_text) {
  std::vector<std::string> chars;
  for (size_t pos = 0; pos < utf8_text.size();) {
    uint32_t cp = 0;
    const size_t len = decodeUtf8At(utf8_text, pos, cp);
    chars.push_back(utf8_text.substr(pos, len));
    pos += len;
  }
  return chars;
}

}  // namespace attnscope
