// UTF-8 as the text inputs and attnscope-model/1's character vocabulary read it: lenient,
// a malformed byte is a one-byte character of its own (never an error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

// Decodes one UTF-8 sequence at text[pos] into cp; returns its length in bytes. A malformed
// byte counts as a one-byte character (cp = U+FFFD).
size_t decodeUtf8At(const std::string& text, size_t pos, uint32_t& cp);

// One string per UTF-8 character (a malformed byte is a one-byte character of its own).
std::vector<std::string> utf8Characters(const std::string& utf8_text);

}  // namespace attnscope
