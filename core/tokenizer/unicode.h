// Unicode for the tokenizer: UTF-8 code points, general categories and normal forms through
// utf8proc (no hand-made tables). Internal to core/tokenizer/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::tok {

// The text with every invalid UTF-8 sequence replaced by U+FFFD (what a Python str holds).
std::string sanitizeUtf8(const std::string& text);
// Code points of valid UTF-8 (after sanitizeUtf8) and back.
std::vector<char32_t> decodeUtf8(const std::string& text);
std::string encodeUtf8(char32_t c);
std::string encodeUtf8(const std::vector<char32_t>& chars);
// Byte length of the UTF-8 sequence that starts with `lead` (1 for a stray byte).
size_t utf8Length(unsigned char lead);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(const std::string& text, NormalForm form);
char32_t toLower(char32_t c);

// Rust's char predicates, as the `tokenizers` sources use them.
bool isWhitespace(char32_t c);   // White_Space
bool isPunctuation(char32_t c);  // P* (or ASCII punctuation, which adds the ASCII symbols)
bool isNumeric(char32_t c);      // N*
bool isMark(char32_t c);         // M*
bool isNonspacingMark(char32_t c);  // Mn
bool isOther(char32_t c);        // C*
// Rust regex's Unicode \w (letters, marks, digits, connectors, joiners): single_word's test.
bool isWordChar(char32_t c);

}  // namespace attnscope::tok
