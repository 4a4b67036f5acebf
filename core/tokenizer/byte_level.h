// GPT-2's byte-level alphabet: every byte as a printable character (pre_tokenizers/byte_level.rs
// bytes_char: "!".."~", "¡".."¬", "®".."ÿ" stand for themselves, the other 68 bytes for U+0100..).
// Internal to core/tokenizer/.
#pragma once

#include <optional>
#include <string>

namespace attnscope::tok {

// GPT-2's pre-tokenizer pattern (ByteLevel with use_regex).
inline constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// Each byte of `text` as its character of the alphabet, in UTF-8 ("Ġ" for a space).
std::string bytesToUnicode(const std::string& text);
// The bytes a piece of the alphabet stands for; nullopt when a character is not in it.
std::optional<std::string> unicodeToBytes(const std::string& piece);

}  // namespace attnscope::tok
