// Pre-tokenizers of tokenizer.json, one row each in kPreTokenizers (semantics of
// tokenizers/src/pre_tokenizers/*.rs and NormalizedString::split).
#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

// A piece cut into [begin, end) spans, each flagged as a match of the delimiter pattern.
struct Cut {
  Span span;
  bool is_match;
};

// Matches of a regex and the text between them, covering the whole text (pattern.rs).
std::vector<Cut> cutsOf(const std::vector<Span>& matches, size_t size) {
  std::vector<Cut> cuts;
  size_t previous = 0;
  for (const Span& m : matches) {
    if (previous != m.first) cuts.push_back({{previous, m.first}, false});
    cuts.push_back({m, true});
    previous = m.second;
  }
  if (previous != size) cuts.push_back({{previous, size}, false});
  return cuts;
}

// Every character `is_delimiter` accepts is a match of its own.
template <typename Predicate>
std::vector<Span> charMatches(const std::string& text, Predicate is_delimiter) {
  std::vector<Span> matches;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8Length(static_cast<unsigned char>(text[i]));
    if (is_delimiter(decodeUtf8(text.substr(i, n)).front())) matches.push_back({i, i + n});
    i += n;
  }
  return matches;
}

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// SplitDelimiterBehavior: which spans become pieces (NormalizedString::split).
std::vector<Span> applyBehavior(std::vector<Cut> cuts, Behavior behavior) {
  std::vector<Span> kept;
  bool previous_match = false;
  if (behavior == Behavior::MergedWithNext) std::reverse(cuts.begin(), cuts.end());
  for (const Cut& cut : cuts) {
    switch (behavior) {
      case Behavior::Removed:
        if (!cut.is_match) kept.push_back(cut.span);
        break;
      case Behavior::Isolated: kept.push_back(cut.span); break;
      case Behavior::Contiguous:
        if (cut.is_match == previous_match && !kept.empty()) kept.back().second = cut.span.second;
        else kept.push_back(cut.span);
        break;
      case Behavior::MergedWithPrevious:
        if (cut.is_match && !previous_match && !kept.empty()) kept.back().second = cut.span.second;
        else kept.push_back(cut.span);
        break;
      case Behavior::MergedWithNext:
        if (cut.is_match && !previous_match && !kept.empty()) kept.back().first = cut.span.first;
        else kept.push_back(cut.span);
        break;
    }
    previous_match = cut.is_match;
  }
  if (behavior == Behavior::MergedWithNext) std::reverse(kept.begin(), kept.end());
  return kept;
}

// Splits every piece by `find` (text -> matches); empty pieces are dropped.
template <typename Find>
std::vector<Piece> splitPieces(const std::vector<Piece>& pieces, Find find, Behavior behavior, bool invert = false) {
  std::vector<Piece> out;
  for (const Piece& piece : pieces) {
    std::vector<Cut> cuts = cutsOf(find(piece.text), piece.text.size());
    if (invert) {
      for (Cut& cut : cuts) cut.is_match = !cut.is_match;
    }
    for (const Span& span : applyBehavior(std::move(cuts), behavior)) {
      if (span.second > span.first) {
        out.push_back({piece.text.substr(span.first, span.second - span.first), piece.at_origin && span.first == 0});
      }
    }
  }
  return out;
}

Behavior behaviorOf(const Node& node) {
  static const std::pair<const char*, Behavior> kNames[] = {
      {"Removed", Behavior::Removed}, {"Isolated", Behavior::Isolated},
      {"MergedWithPrevious", Behavior::MergedWithPrevious}, {"MergedWithNext", Behavior::MergedWithNext},
      {"Contiguous", Behavior::Contiguous}};
  const std::string name = node.value.is_string() ? node.value.get<std::string>() : "";
  for (const auto& [spelled, behavior] : kNames) {
    if (name == spelled) return behavior;
  }
  node.fail((node.value.is_null() ? std::string("is missing") : "\"" + name + "\" is not supported") +
            " (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

template <typename Predicate>
PreTokenizer charSplitter(Predicate is_delimiter, Behavior behavior) {
  return [is_delimiter, behavior](std::vector<Piece> pieces) {
    return splitPieces(pieces, [&](const std::string& text) { return charMatches(text, is_delimiter); }, behavior);
  };
}

PreTokenizer regexSplitter(const Regex& regex, Behavior behavior, bool invert) {
  return [regex, behavior, invert](std::vector<Piece> pieces) {
    return splitPieces(pieces, [&](const std::string& text) { return regex.findAll(text); }, behavior, invert);
  };
}

PreTokenizer makeByteLevel(const Node& node) {
  const bool add_prefix_space = node.boolean("add_prefix_space", true);
  const bool use_regex = node.boolean("use_regex", true);
  const Regex gpt2(kGpt2Pattern, "GPT-2's pattern");
  return [=](std::vector<Piece> pieces) {
    for (Piece& piece : pieces) {
      if (add_prefix_space && piece.text[0] != ' ') piece.text = " " + piece.text;
    }
    if (use_regex) pieces = regexSplitter(gpt2, Behavior::Isolated, false)(std::move(pieces));
    for (Piece& piece : pieces) piece.text = bytesToUnicode(piece.text);
    return pieces;
  };
}

PreTokenizer makeMetaspace(const Node& node) {
  const std::string replacement = node.string("replacement", "\u2581");
  if (decodeUtf8(replacement).size() != 1) node.at("replacement").fail("must be one character");
  std::string scheme = node.boolean("add_prefix_space", true) ? "always" : "never";  // before prepend_scheme
  scheme = node.string("prepend_scheme", scheme);
  if (scheme != "always" && scheme != "first" && scheme != "never") {
    node.at("prepend_scheme").fail("\"" + scheme + "\" is not supported (always, first, never)");
  }
  const bool split = node.boolean("split", true);
  const Regex space = Regex::literal(" ", "Metaspace"), marker = Regex::literal(replacement, "Metaspace");
  return [=](std::vector<Piece> pieces) {
    for (Piece& piece : pieces) {
      std::string replaced;
      for (const char c : piece.text) replaced += c == ' ' ? replacement : std::string(1, c);
      const bool starts = replaced.compare(0, replacement.size(), replacement) == 0;
      if (!starts && (scheme == "always" || (scheme == "first" && piece.at_origin))) replaced = replacement + replaced;
      piece.text = replaced;
    }
    return split ? regexSplitter(marker, Behavior::MergedWithNext, false)(std::move(pieces)) : pieces;
  };
}

PreTokenizer makeSplit(const Node& node) {
  return regexSplitter(patternOf(node.at("pattern")), behaviorOf(node.at("behavior")), node.boolean("invert", false));
}

PreTokenizer makeBert(const Node&) {
  return [](std::vector<Piece> pieces) {
    pieces = charSplitter(isWhitespace, Behavior::Removed)(std::move(pieces));
    return charSplitter(isPunctuation, Behavior::Isolated)(std::move(pieces));
  };
}

PreTokenizer makeWhitespace(const Node&) {
  // Rust's Unicode \w (Alphabetic, marks, decimal digits, connectors, joiners), spelled out:
  // PCRE2's \w has no marks.
  const std::string word = "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";
  const std::string not_word_or_space = "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\s]";
  return regexSplitter(Regex(word + "+|" + not_word_or_space + "+", "Whitespace"), Behavior::Removed, true);
}

PreTokenizer makeDigits(const Node& node) {
  return charSplitter(isNumeric, node.boolean("individual_digits", false) ? Behavior::Isolated : Behavior::Contiguous);
}

PreTokenizer makeCharDelimiterSplit(const Node& node) {
  const std::vector<char32_t> delimiter = decodeUtf8(node.string("delimiter"));
  if (delimiter.size() != 1) node.at("delimiter").fail("must be one character");
  return charSplitter([c = delimiter[0]](char32_t x) { return x == c; }, Behavior::Removed);
}

PreTokenizer makeSequence(const Node& node);

const Kind<PreTokenizer> kPreTokenizers[] = {
    {"ByteLevel", makeByteLevel},
    {"Split", makeSplit},
    {"Metaspace", makeMetaspace},
    {"BertPreTokenizer", makeBert},
    {"Whitespace", makeWhitespace},
    {"WhitespaceSplit", [](const Node&) { return charSplitter(isWhitespace, Behavior::Removed); }},
    {"Digits", makeDigits},
    {"Punctuation",
     [](const Node& node) {
       return charSplitter(isPunctuation, node.has("behavior") ? behaviorOf(node.at("behavior")) : Behavior::Isolated);
     }},
    {"CharDelimiterSplit", makeCharDelimiterSplit},
    {"Sequence", makeSequence},
};

PreTokenizer makeSequence(const Node& node) {
  const auto steps = makeListFromRegistry(node.at("pretokenizers"), kPreTokenizers);
  const std::string where = node.file + ": " + node.field;
  const auto bytes = [](const std::vector<Piece>& pieces) {
    size_t n = 0;
    for (const Piece& piece : pieces) n += piece.text.size();
    return n;
  };
  return [steps, where, bytes](std::vector<Piece> pieces) {
    const size_t before = bytes(pieces);
    for (size_t i = 0; i < steps.size(); ++i) {
      pieces = steps[i](std::move(pieces));
      checkGrowth(before, bytes(pieces), where + ".pretokenizers[" + std::to_string(i) + "]");
    }
    return pieces;
  };
}

}  // namespace

Regex patternOf(const Node& pattern) {
  if (pattern.has("Regex")) return Regex(pattern.string("Regex"), pattern.file + ": " + pattern.field + ".Regex");
  if (pattern.has("String")) {
    const std::string text = pattern.string("String");
    // An empty String pattern never matches (pattern.rs: the whole text is one non-match).
    return text.empty() ? Regex("(?!)", "") : Regex::literal(text, pattern.file + ": " + pattern.field);
  }
  pattern.fail(pattern.value.is_null() ? "is missing" : "must be {\"String\": ...} or {\"Regex\": ...}");
}

PreTokenizer makePreTokenizer(const Node& node) { return makeFromRegistry(node, kPreTokenizers); }

PreTokenizer makeGpt2PreTokenizer() {
  const json settings = {{"add_prefix_space", false}, {"use_regex", true}};
  return makeByteLevel(Node{settings, "", ""});
}

}  // namespace attnscope::tok
