// Normalizers of tokenizer.json, one row each in kNormalizers (names and semantics of
// tokenizers/src/normalizers/*.rs).
#include "tokenizer/pipeline.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

// Keeps the characters `keep` accepts, each mapped by `map`.
template <typename Keep, typename Map>
std::string filterMap(const std::string& text, Keep keep, Map map) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : decodeUtf8(text)) {
    if (keep(c)) out += encodeUtf8(map(c));
  }
  return out;
}

// Rust's char::to_lowercase: the simple mapping, except U+0130 (İ), whose full lowercase is
// two characters, "i" and a combining dot above.
std::string lowercase(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : decodeUtf8(text)) out += c == 0x130 ? std::string("i\u0307") : encodeUtf8(toLower(c));
  return out;
}

Normalizer normalForm(NormalForm form) {
  return [form](const std::string& text) { return normalize(text, form); };
}

Normalizer makeReplace(const Node& node) {
  const Regex pattern = patternOf(node.at("pattern"));
  const std::string content = node.string("content");
  return [pattern, content](const std::string& text) {
    std::string out;
    size_t done = 0;
    for (const auto& [begin, end] : pattern.findAll(text)) {
      out.append(text, done, begin - done);
      out += content;
      done = end;
    }
    return out + text.substr(done);
  };
}

Normalizer makePrepend(const Node& node) {
  const std::string prefix = node.string("prepend");
  return [prefix](const std::string& text) { return text.empty() ? text : prefix + text; };
}

Normalizer makeStrip(const Node& node) {
  const bool left = node.boolean("strip_left", true), right = node.boolean("strip_right", true);
  return [left, right](const std::string& text) {
    std::vector<char32_t> chars = decodeUtf8(text);
    size_t begin = 0, end = chars.size();
    while (left && begin < end && isWhitespace(chars[begin])) ++begin;
    while (right && end > begin && isWhitespace(chars[end - 1])) --end;
    return encodeUtf8(std::vector<char32_t>(chars.begin() + static_cast<std::ptrdiff_t>(begin),
                                            chars.begin() + static_cast<std::ptrdiff_t>(end)));
  };
}

// BERT's CJK ideograph blocks (normalizers/bert.rs is_chinese_char).
bool isChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

Normalizer makeBert(const Node& node) {
  const bool clean_text = node.boolean("clean_text", true);
  const bool chinese = node.boolean("handle_chinese_chars", true);
  const bool lower = node.boolean("lowercase", true);
  const bool strip_accents = node.boolean("strip_accents", lower);  // null: follows lowercase
  return [=](const std::string& input) {
    std::string text = input;
    if (clean_text) {
      const auto is_tab_or_newline = [](char32_t c) { return c == '\t' || c == '\n' || c == '\r'; };
      text = filterMap(
          text, [&](char32_t c) { return !(c == 0 || c == 0xFFFD || (isOther(c) && !is_tab_or_newline(c))); },
          [&](char32_t c) { return is_tab_or_newline(c) || isWhitespace(c) ? U' ' : c; });
    }
    if (chinese) {
      std::string spaced;
      for (const char32_t c : decodeUtf8(text)) spaced += isChineseChar(c) ? " " + encodeUtf8(c) + " " : encodeUtf8(c);
      text = spaced;
    }
    if (strip_accents) {
      text = filterMap(normalize(text, NormalForm::NFD), [](char32_t c) { return !isNonspacingMark(c); },
                       [](char32_t c) { return c; });
    }
    return lower ? lowercase(text) : text;
  };
}

Normalizer makeSequence(const Node& node);

const Kind<Normalizer> kNormalizers[] = {
    {"NFC", [](const Node&) { return normalForm(NormalForm::NFC); }},
    {"NFD", [](const Node&) { return normalForm(NormalForm::NFD); }},
    {"NFKC", [](const Node&) { return normalForm(NormalForm::NFKC); }},
    {"NFKD", [](const Node&) { return normalForm(NormalForm::NFKD); }},
    {"Lowercase", [](const Node&) { return Normalizer(lowercase); }},
    {"StripAccents",
     [](const Node&) {
       return Normalizer([](const std::string& text) {
         return filterMap(text, [](char32_t c) { return !isMark(c); }, [](char32_t c) { return c; });
       });
     }},
    {"Replace", makeReplace},
    {"Prepend", makePrepend},
    {"Strip", makeStrip},
    {"BertNormalizer", makeBert},
    {"Sequence", makeSequence},
};

Normalizer makeSequence(const Node& node) {
  const auto steps = makeListFromRegistry(node.at("normalizers"), kNormalizers);
  const std::string where = node.file + ": " + node.field;
  return [steps, where](const std::string& text) {
    std::string out = text;
    for (size_t i = 0; i < steps.size(); ++i) {
      out = steps[i](out);
      checkGrowth(text.size(), out.size(), where + ".normalizers[" + std::to_string(i) + "]");
    }
    return out;
  };
}

}  // namespace

Normalizer makeNormalizer(const Node& node) { return makeFromRegistry(node, kNormalizers); }

}  // namespace attnscope::tok
