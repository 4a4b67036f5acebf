// Readable labels for token pieces (docs/models.md, "Tokenizers"): a space shows as "␣", a newline as
// "↵", a tab as "⇥"; GPT-2's byte alphabet ("Ġ", "Ċ") and SentencePiece's "▁" are decoded
// first; a byte-fallback piece <0xNN> of a whole (ASCII) character shows as that character;
// in an encoded text, a character cut across pieces shows whole on its first piece and the
// pieces it took bytes from as "·"; any other byte that is not a whole UTF-8 character stays
// <0xNN>.
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

// The bytes a piece stands for: GPT-2's byte alphabet, a byte-fallback <0xNN>, or its text
// with ▁ as a space.
std::string pieceBytes(const std::string& piece, PieceStyle style) {
  if (style == PieceStyle::ByteLevel) {
    if (const auto bytes = unicodeToBytes(piece)) return *bytes;
  }
  if (const auto byte = byteFallback(piece)) return std::string(1, static_cast<char>(*byte));
  return replaceAll(piece, "\u2581", " ");
}

// How many bytes the UTF-8 character cut off at the end of `bytes` still needs (0: none cut).
size_t missingBytes(const std::string& bytes) {
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const auto byte = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t length = utf8Length(byte);
    return length > back ? length - back : 0;
  }
  return 0;
}

size_t leadingContinuationBytes(const std::string& bytes) {
  size_t n = 0;
  while (n < bytes.size() && (static_cast<unsigned char>(bytes[n]) & 0xC0) == 0x80) ++n;
  return n;
}

}  // namespace

std::string readableLabel(const std::string& piece, PieceStyle style) {
  return readableBytes(pieceBytes(piece, style));
}

std::vector<std::string> readableLabels(const std::vector<std::string>& pieces, const std::vector<bool>& special,
                                        PieceStyle style) {
  std::vector<std::string> bytes(pieces.size()), labels(pieces.size());
  std::vector<size_t> lent(pieces.size(), 0);  // leading bytes shown on an earlier piece
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!special[i]) bytes[i] = pieceBytes(pieces[i], style);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (special[i]) {
      labels[i] = pieces[i];
      continue;
    }
    std::string shown = bytes[i].substr(lent[i]);
    // Complete a character that this piece starts from the pieces after it (byte fallback,
    // or byte-level pieces that cut a character): it shows whole here.
    size_t missing = missingBytes(shown);
    std::vector<std::pair<size_t, size_t>> borrowed;  // (piece, bytes)
    for (size_t j = i + 1; missing > 0 && j < pieces.size() && !special[j] && lent[j] == 0; ++j) {
      const size_t take = std::min(missing, leadingContinuationBytes(bytes[j]));
      if (take == 0) break;
      shown += bytes[j].substr(0, take);
      borrowed.emplace_back(j, take);
      missing -= take;
      if (take < bytes[j].size()) break;
    }
    if (missing == 0) {
      for (const auto& [j, take] : borrowed) lent[j] = take;
    } else {
      shown = bytes[i].substr(lent[i]);
    }
    // A piece whose bytes all went to an earlier piece continues that piece's character.
    labels[i] = shown.empty() && lent[i] > 0 ? kContinuationMark : readableBytes(shown);
  }
  return labels;
}

}  // namespace attnscope::tok
