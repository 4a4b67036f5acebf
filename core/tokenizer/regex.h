// Regexes of tokenizer.json (Oniguruma syntax in Hugging Face's library) through PCRE2 in UTF
// mode with Unicode properties (\p{L}, \s, \w by Unicode). Internal to core/tokenizer/.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::tok {

using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

class Regex {
 public:
  // Throws InputError "<where> is not a valid regex: <PCRE2's reason> at offset N".
  Regex(const std::string& pattern, const std::string& where);
  static Regex literal(const std::string& text, const std::string& where);  // the text, escaped
  // Every non-overlapping match, left to right, in valid UTF-8 (an empty match moves on by
  // one character). Throws InputError when a match runs past PCRE2's match limit.
  std::vector<Span> findAll(const std::string& text) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;
  std::string where_;
};

}  // namespace attnscope::tok
