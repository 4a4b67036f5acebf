#include "tokenizer/unicode.h"

#include <cctype>
#include <cstdlib>
#include <memory>

#include <algorithm>

#include <utf8proc.h>

#include "tokenizer/tokenizer.h"

namespace attnscope::tok {

std::string sanitizeUtf8(const std::string& text) { return encodeUtf8(decodeUtf8(text)); }

std::vector<char32_t> decodeUtf8(const std::string& text) {
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + i, static_cast<utf8proc_ssize_t>(text.size() - i), &c);
    chars.push_back(n > 0 && c >= 0 ? static_cast<char32_t>(c) : U'\uFFFD');
    i += n > 0 ? static_cast<size_t>(n) : 1;
  }
  return chars;
}

std::string encodeUtf8(char32_t c) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

std::string encodeUtf8(const std::vector<char32_t>& chars) {
  std::string out;
  for (const char32_t c : chars) out += encodeUtf8(c);
  return out;
}

size_t utf8Length(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

std::string normalize(const std::string& text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* result = nullptr;
  const std::string valid = sanitizeUtf8(text);
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                                          static_cast<utf8proc_ssize_t>(valid.size()), &result,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) return valid;  // only out of memory is left once the text is valid UTF-8
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  return std::string(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
}

char32_t toLower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }

namespace {
utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }
bool inRange(utf8proc_category_t x, utf8proc_category_t first, utf8proc_category_t last) { return x >= first && x <= last; }
}  // namespace

bool isWhitespace(char32_t c) {
  const auto cat = category(c);
  return (c >= 0x09 && c <= 0x0D) || c == 0x85 || inRange(cat, UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZP);
}
bool isPunctuation(char32_t c) {
  const bool ascii_punctuation = c < 0x80 && std::ispunct(static_cast<int>(c));
  return ascii_punctuation || inRange(category(c), UTF8PROC_CATEGORY_PC, UTF8PROC_CATEGORY_PO);
}
bool isNumeric(char32_t c) { return inRange(category(c), UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NO); }
bool isMark(char32_t c) { return inRange(category(c), UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_ME); }
bool isNonspacingMark(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }
bool isOther(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CN || inRange(cat, UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CO);
}

bool isWordChar(char32_t c) {
  const auto cat = category(c);
  return inRange(cat, UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_ND) || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D;
}

}  // namespace attnscope::tok

namespace attnscope {

int64_t displayWidth(const std::string& utf8) {
  int64_t width = 0;
  for (const char32_t c : tok::decodeUtf8(tok::sanitizeUtf8(utf8)))
    width += std::max(0, utf8proc_charwidth(static_cast<utf8proc_int32_t>(c)));
  return width;
}

}  // namespace attnscope
