#include "analysis/head_filter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <locale>
#include <sstream>

namespace attnscope {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string withoutSpaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

// A metric by JSON name or heading (spaces dropped, case ignored); nullptr when none.
const MetricInfo* metricNamed(const std::string& name) {
  for (const MetricInfo& info : headMetricInfos())
    if (name == info.name || name == lower(withoutSpaces(info.heading))) return &info;
  return nullptr;
}

// "NAME>V" and the like; false when the word has no comparison in it.
bool parseThreshold(const std::string& word, HeadThreshold& t, std::string& error) {
  const size_t at = word.find_first_of("<>");
  if (at == std::string::npos || at == 0) return false;
  t.greater = word[at] == '>';
  t.or_equal = at + 1 < word.size() && word[at + 1] == '=';
  const std::string name = word.substr(0, at), number = word.substr(at + (t.or_equal ? 2 : 1));
  t.metric = metricNamed(name);
  if (!t.metric) {
    error = "\"" + name + "\" is not a metric (e.g. entropy, sink, prev, induction)";
    return true;
  }
  std::istringstream in(number);
  in.imbue(std::locale::classic());
  if (!(in >> t.value) || !in.eof() || !std::isfinite(t.value)) error = "\"" + number + "\" is not a number (in " + word + ")";
  return true;
}

// `word` starts one of text's words (all of it when word ends in a digit: "l1" is not "l10").
bool matchesWord(const std::string& word, const std::vector<std::string>& text_words) {
  const bool whole = std::isdigit(static_cast<unsigned char>(word.back()));
  for (const std::string& w : text_words)
    if (whole ? w == word : w.compare(0, word.size(), word) == 0) return true;
  return false;
}

}  // namespace

bool HeadThreshold::passes(const HeadMetrics& m) const {
  const double v = m.*metric->field;
  if (std::isnan(v)) return false;
  if (greater) return or_equal ? v >= value : v > value;
  return or_equal ? v <= value : v < value;
}

bool HeadFilter::passes(const HeadMetrics& m, const std::string& text) const {
  std::vector<std::string> text_words;
  std::istringstream in(lower(text));
  for (std::string w; in >> w;) text_words.push_back(w);
  for (const std::string& word : words)
    if (!matchesWord(word, text_words)) return false;
  for (const HeadThreshold& t : thresholds)
    if (!t.passes(m)) return false;
  return true;
}

HeadFilter parseHeadFilter(const std::string& text) {
  HeadFilter filter;
  std::istringstream in(lower(text));
  std::string word;
  while (in >> word) {
    HeadThreshold t;
    std::string error;
    if (!parseThreshold(word, t, error)) filter.words.push_back(word);
    else if (!error.empty()) filter.error = filter.error.empty() ? error : filter.error;
    else filter.thresholds.push_back(t);
  }
  return filter;
}

}  // namespace attnscope
