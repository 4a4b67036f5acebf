// Readable labels for token pieces (README, "Tokenizers"): a space shows as "␣", a newline as
// "↵", a tab as "⇥"; GPT-2's byte alphabet ("Ġ", "Ċ") and SentencePiece's "▁" are decoded
// first; a byte-fallback piece <0xNN> of a whole (ASCII) character shows as that character;
// any other byte that is not a whole UTF-8 character stays <0xNN>.
#include <cstdio>

#include "tokenizer/byte_level.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

std::string hexByte(unsigned char byte) {
  char name[8];
  std::snprintf(name, sizeof(name), "<0x%02X>", byte);
  return name;
}

// Valid characters as themselves (whitespace as marks); other bytes as <0xNN>.
std::string readableBytes(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const size_t n = utf8Length(lead);
    const std::string one = bytes.substr(i, n);
    if (lead == ' ') out += kSpaceMark;
    else if (lead == '\n') out += kNewlineMark;
    else if (lead == '\t') out += kTabMark;
    else if (lead < 0x20 || lead == 0x7F || n > bytes.size() - i || sanitizeUtf8(one) != one) {
      out += hexByte(lead);
      i += 1;
      continue;
    } else {
      out += one;
    }
    i += n;
  }
  return out;
}

// "<0x41>" -> 0x41.
std::optional<unsigned char> byteFallback(const std::string& piece) {
  unsigned value = 0;
  char rest = 0;
  if (piece.size() != 6 || std::sscanf(piece.c_str(), "<0x%2X>%c", &value, &rest) != 1 || piece[5] != '>') {
    return std::nullopt;
  }
  return static_cast<unsigned char>(value);
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

std::string readableLabel(const std::string& piece, PieceStyle style) {
  if (style == PieceStyle::ByteLevel) {
    if (const auto bytes = unicodeToBytes(piece)) return readableBytes(*bytes);
  }
  if (const auto byte = byteFallback(piece)) return readableBytes(std::string(1, static_cast<char>(*byte)));
  return readableBytes(replaceAll(piece, "\u2581", " "));
}

}  // namespace attnscope::tok
