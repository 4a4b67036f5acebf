// Added tokens (tokenizer.json "added_tokens", special tokens of tokenizer_config.json): found
// in the text before the model sees it, as tokenizer/added_vocabulary.rs does. Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnscope::tok {

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// A stretch of text on its way to the model, or an added token already found (id).
struct Segment {
  std::string text;
  std::optional<int64_t> id;
  bool at_origin = false;  // starts at byte 0 of the user's text
};

// Leftmost-longest matching of a set of strings with single_word / lstrip / rstrip.
class AddedMatcher {
 public:
  // (pattern, token) pairs: the content, or its normalized form for normalized tokens; then
  // index() once, before split().
  void add(const std::string& pattern, const AddedToken& token);
  void index();
  bool empty() const { return patterns_.empty(); }
  // The segment cut around every match (empty pieces dropped); `segment` has no id.
  std::vector<Segment> split(const Segment& segment) const;

 private:
  struct Pattern {
    std::string text;
    AddedToken token;
  };
  // Longest pattern that starts at `at`, or nullptr.
  const Pattern* longestAt(const std::string& text, size_t at) const;
  std::vector<Pattern> patterns_;  // longest first
  std::vector<std::vector<size_t>> by_first_byte_ = std::vector<std::vector<size_t>>(256);
};

}  // namespace attnscope::tok
