#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

// The character that ends text[0, end) / starts text[begin, ...).
char32_t charBefore(const std::string& text, size_t end) {
  size_t begin = end;
  do --begin;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80);
  return decodeUtf8(text.substr(begin, end - begin)).front();
}
char32_t charAt(const std::string& text, size_t begin) {
  return decodeUtf8(text.substr(begin, utf8Length(static_cast<unsigned char>(text[begin])))).front();
}

// Where the run of whitespace that ends text[0, end) begins.
size_t whitespaceRunBefore(const std::string& text, size_t end) {
  while (end > 0 && isWhitespace(charBefore(text, end))) {
    do --end;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80);
  }
  return end;
}
// Where the run of whitespace that starts at `begin` ends.
size_t whitespaceRunAfter(const std::string& text, size_t begin) {
  while (begin < text.size() && isWhitespace(charAt(text, begin))) begin += utf8Length(static_cast<unsigned char>(text[begin]));
  return begin;
}

}  // namespace

void AddedMatcher::add(const std::string& pattern, const AddedToken& token) {
  if (!pattern.empty()) patterns_.push_back({pattern, token});
}

void AddedMatcher::index() {
  std::stable_sort(patterns_.begin(), patterns_.end(),
                   [](const Pattern& a, const Pattern& b) { return a.text.size() > b.text.size(); });
  for (auto& list : by_first_byte_) list.clear();
  for (size_t i = 0; i < patterns_.size(); ++i) {
    by_first_byte_[static_cast<unsigned char>(patterns_[i].text[0])].push_back(i);
  }
}

const AddedMatcher::Pattern* AddedMatcher::longestAt(const std::string& text, size_t at) const {
  for (const size_t i : by_first_byte_[static_cast<unsigned char>(text[at])]) {
    if (text.compare(at, patterns_[i].text.size(), patterns_[i].text) == 0) return &patterns_[i];
  }
  return nullptr;
}

std::vector<Segment> AddedMatcher::split(const Segment& segment) const {
  const std::string& text = segment.text;
  std::vector<Segment> out;
  const auto emit = [&](size_t begin, size_t end, std::optional<int64_t> id) {
    if (end > begin) out.push_back({text.substr(begin, end - begin), id, segment.at_origin && begin == 0});
  };
  size_t done = 0;  // the end of the last piece cut off
  for (size_t at = 0; at < text.size();) {
    const Pattern* match = longestAt(text, at);
    if (!match) {
      ++at;
      continue;
    }
    size_t start = at, stop = at + match->text.size();
    at = stop;  // matches never overlap, kept or not
    const AddedToken& token = match->token;
    if (token.single_word) {
      const bool word_before = start > 0 && isWordChar(charBefore(text, start));
      const bool word_after = stop < text.size() && isWordChar(charAt(text, stop));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) start = std::max(whitespaceRunBefore(text, start), done);
    if (token.rstrip) stop = whitespaceRunAfter(text, stop);
    emit(done, start, std::nullopt);
    emit(start, stop, token.id);
    done = stop;
  }
  emit(done, text.size(), std::nullopt);
  return out;
}

}  // namespace attnscope::tok
