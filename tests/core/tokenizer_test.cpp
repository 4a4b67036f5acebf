// Hugging Face tokenizers (core/tokenizer): tables of cases on small tokenizer.json files
// written here, whose expected ids are worked out by hand from the published algorithms
// (tokenizers/src: models/bpe, models/wordpiece, normalizers, pre_tokenizers, processors,
// added_vocabulary.rs). GPT-2's real vocabulary and the JS references: tests/cli/test_tokenizer_*.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace attnscope {
namespace {

using nlohmann::json;
using Ids = std::vector<int64_t>;

Ids idsOf(const std::vector<Token>& tokens) {
  Ids ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

// {"piece": id} numbered in order.
json vocabOf(const std::vector<std::string>& pieces, int64_t first_id = 0) {
  json vocab = json::object();
  for (const auto& piece : pieces) vocab[piece] = first_id++;
  return vocab;
}

json tokenizerJson(json model, json normalizer = nullptr, json pre_tokenizer = nullptr, json post = nullptr,
                   json added = json::array()) {
  return {{"version", "1.0"}, {"added_tokens", added}, {"normalizer", normalizer}, {"pre_tokenizer", pre_tokenizer},
          {"post_processor", post}, {"decoder", nullptr}, {"model", model}};
}

Ids encodeIds(const json& tokenizer, const std::string& text, bool add_special = true) {
  return idsOf(HfTokenizer::fromJson(tokenizer.dump(), "t/tokenizer.json").encode(text, add_special));
}

struct Case {
  const char* what;
  std::string text;
  Ids ids;
};

// --- BPE: merge priority, leftmost among equal ranks, byte_fallback, fuse_unk, ignore_merges.

TEST(TokenizerBpe, MergePriorityAndOrder) {
  const json vocab = vocabOf({"a", "b", "c", "ab", "bc", "abc", "aa"});
  // "b c" ranks before "a b": a|bc, and "a bc" is no merge.
  const json bc_first = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"b c", "a b", "ab c"}}};
  // "a b" first, then "ab c" (pair spelling of merges): abc.
  const json ab_first = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({json::array({"a", "b"}), json::array({"b", "c"}), json::array({"ab", "c"})})}};
  // "a a" twice in "aaa": the leftmost pair merges first: aa|a.
  const json aa = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a a"}}};
  EXPECT_EQ(encodeIds(tokenizerJson(bc_first), "abc"), (Ids{0, 4}));
  EXPECT_EQ(encodeIds(tokenizerJson(ab_first), "abc"), (Ids{5}));
  EXPECT_EQ(encodeIds(tokenizerJson(aa), "aaa"), (Ids{6, 0}));
  EXPECT_EQ(encodeIds(tokenizerJson(aa), "aaaa"), (Ids{6, 6}));
}

// Llama-2 style: Prepend("▁") + Replace(" " -> "▁"), no pre-tokenizer, BPE with byte_fallback
// (<0x00>..<0xFF> at ids 3..258) and fuse_unk, TemplateProcessing "<s> $A".
json llama2Style(bool byte_fallback) {
  json vocab = vocabOf({"<unk>", "<s>", "</s>"});
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  const std::vector<std::string> words = {"\u2581", "h", "i", "\u2581h", "\u2581hi", "!"};
  for (size_t i = 0; i < words.size(); ++i) vocab[words[i]] = 259 + static_cast<int64_t>(i);
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\u2581 h", "\u2581h i"}},
                      {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", byte_fallback}};
  const json normalizer = {{"type", "Sequence"},
                           {"normalizers",
                            {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                             {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  const json post = {{"type", "TemplateProcessing"},
                     {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                     {"pair", json::array()},
                     {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  const json added = {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}},
                      {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}}};
  return tokenizerJson(model, normalizer, nullptr, post, added);
}

TEST(TokenizerBpe, Llama2ByteFallback) {
  const json t = llama2Style(true);
  const Case cases[] = {
      // "▁hi▁你": ▁ h i ▁ E4 BD A0 -> ▁h -> ▁hi; 你 is three byte pieces 3+0xE4, 3+0xBD, 3+0xA0.
      {"CJK falls back to bytes", "hi 你", {1, 263, 259, 231, 192, 163}},
      {"a newline is <0x0A>", "hi\n", {1, 263, 13}},
      {"empty text: only <s>", "", {1}},
      // "<s>" is found before the normalizer; "hi" after it still gets Prepend's ▁.
      {"an added special token in the text", "<s>hi", {1, 1, 263}},
      {"! stays whole", "hi!", {1, 263, 264}},
  };
  for (const Case& c : cases) EXPECT_EQ(encodeIds(t, c.text), c.ids) << c.what;
  EXPECT_EQ(encodeIds(t, "hi", false), (Ids{263}));
  // Labels: 你's three byte pieces show the character on the first, "·" on the others; the
  // same for the ids alone (--ids, a generation).
  const auto tokenizer = HfTokenizer::fromJson(t.dump(), "t/tokenizer.json");
  std::vector<std::string> labels;
  Ids ids;
  for (const Token& token : tokenizer.encode("hi 你\n")) labels.push_back(token.label), ids.push_back(token.id);
  EXPECT_EQ(labels, (std::vector<std::string>{"<s>", "\u2423hi", "\u2423", "\u4f60", "\u00b7", "\u00b7", "\u21B5"}));
  EXPECT_EQ(tokenizer.labels(ids), labels);
  // A continuation without its lead, a lead without its continuation: their byte names.
  EXPECT_EQ(tokenizer.labels({3 + 0xBD, 3 + 0xE4, 1}), (std::vector<std::string>{"<0xBD>", "<0xE4>", "<s>"}));
}

// Within a limit (docs/cli.md, --truncate): the first or last tokens of the full encoding, the
// special tokens the post-processor adds kept and counted; `cut` says whether any was dropped.
TEST(TokenizerBpe, EncodeWithinALimit) {
  const auto tokenizer = HfTokenizer::fromJson(llama2Style(true).dump(), "t/tokenizer.json");
  const std::string text = "hi hi 你 hi\nhi";
  const Ids all = idsOf(tokenizer.encode(text));
  ASSERT_EQ(all.size(), 11u);  // <s> ▁hi ▁hi ▁ E4 BD A0 ▁hi ↵ h i
  for (const size_t n : {1u, 2u, 5u, 10u, 11u, 12u}) {
    bool cut = true;
    const std::vector<Token> first = tokenizer.encode(text, EncodeLimit{n, false}, &cut);
    const size_t kept = std::min(n, all.size());
    EXPECT_EQ(idsOf(first), Ids(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kept))) << n;
    EXPECT_EQ(cut, n < all.size()) << n;
    const std::vector<Token> last = tokenizer.encode(text, EncodeLimit{n, true}, &cut);
    Ids expected{all.front()};  // <s> stays first
    expected.insert(expected.end(), all.end() - static_cast<std::ptrdiff_t>(kept - 1), all.end());
    EXPECT_EQ(idsOf(last), expected) << n;
  }
  // The first kept pieces continue a character whose lead was dropped: their byte names.
  bool cut = false;
  std::vector<std::string> labels;
  for (const Token& token : tokenizer.encode(text, EncodeLimit{7, true}, &cut)) labels.push_back(token.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"<s>", "<0xBD>", "<0xA0>", "\u2423hi", "\u21B5", "h", "i"}));
}

TEST(TokenizerBpe, FuseUnkWithoutByteFallback) {
  json t = llama2Style(false);
  EXPECT_EQ(encodeIds(t, "hi 你好"), (Ids{1, 263, 259, 0}));  // 你好: one fused <unk>
  t["model"]["fuse_unk"] = false;
  EXPECT_EQ(encodeIds(t, "hi 你好"), (Ids{1, 263, 259, 0, 0}));
  const auto tokens = HfTokenizer::fromJson(t.dump(), "t/tokenizer.json").encode("你");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_TRUE(tokens[0].special);
  EXPECT_TRUE(tokens[2].unknown);
}

TEST(TokenizerBpe, IgnoreMergesAndSubwordAffixes) {
  const json vocab = vocabOf({"a", "b", "c", "ab", "abc", "##b", "##c", "a##b"});
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}, {"ignore_merges", true}};
  EXPECT_EQ(encodeIds(tokenizerJson(model), "abc"), (Ids{4}));  // the word is in the vocabulary
  model["ignore_merges"] = false;
  EXPECT_EQ(encodeIds(tokenizerJson(model), "abc"), (Ids{3, 2}));
  // continuing_subword_prefix "##": a ##b ##c; merge "a ##b" makes "ab" (the prefix dropped).
  model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a ##b"}}, {"continuing_subword_prefix", "##"}};
  EXPECT_EQ(encodeIds(tokenizerJson(model), "abc"), (Ids{3, 6}));
}

// --- WordPiece, BERT style: BertNormalizer + BertPreTokenizer + [CLS] $A [SEP].

json bertStyle(int64_t max_chars) {
  const json vocab = vocabOf({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "un", "##aff", "##able", ",", "!", "world", "文"});
  const json model = {{"type", "WordPiece"}, {"vocab", vocab}, {"unk_token", "[UNK]"},
                      {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", max_chars}};
  const json normalizer = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                           {"strip_accents", nullptr}, {"lowercase", true}};
  const json post = {{"type", "TemplateProcessing"}, {"single", "[CLS]:0 $A:0 [SEP]:0"}, {"pair", "[CLS] $A [SEP] $B:1 [SEP]:1"},
                     {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
                                         {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}};
  const json added = {{{"id", 3}, {"content", "[SEP]"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}}};
  return tokenizerJson(model, normalizer, {{"type", "BertPreTokenizer"}}, post, added);
}

TEST(TokenizerWordPiece, BertStyle) {
  const json t = bertStyle(100);
  const Case cases[] = {
      {"lowercase, punctuation isolated, ## pieces", "Hello, UNAFFABLE world!", {2, 4, 8, 5, 6, 7, 10, 9, 3}},
      {"accents stripped (strip_accents follows lowercase)", "Héllo", {2, 4, 3}},
      {"CJK characters are words of their own", "hello中文", {2, 4, 1, 11, 3}},
      {"an unknown piece makes the whole word [UNK]", "unaffablex", {2, 1, 3}},
      {"control characters removed, tabs are spaces", "hello\x01\tworld", {2, 4, 10, 3}},
      {"[SEP] in the text", "hello[SEP]", {2, 4, 3, 3}},
  };
  for (const Case& c : cases) EXPECT_EQ(encodeIds(t, c.text), c.ids) << c.what;
  EXPECT_EQ(encodeIds(bertStyle(5), "hello unaffable"), (Ids{2, 4, 1, 3}));  // 9 characters > 5
}

TEST(TokenizerWordPiece, BertAndRobertaProcessing) {
  json t = bertStyle(100);
  t["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}};
  EXPECT_EQ(encodeIds(t, "hello"), (Ids{2, 4, 3}));
  t["post_processor"] = {{"type", "Sequence"},
                         {"processors", {{{"type", "ByteLevel"}, {"trim_offsets", false}},
                                         {{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}}}};
  EXPECT_EQ(encodeIds(t, "hello"), (Ids{2, 4, 3}));
}

// --- SentencePieceBpe (a GGUF file's `llama` vocabulary, as llama.cpp's SPM): the pair with the
// highest score merges first, the leftmost among equal scores; a symbol that is no piece is its
// <0xXX> bytes, else the unk token. Worked by hand on "abab" + "c" + "d": pairs ab (-1), ba (-2),
// ab (-1): the left "ab" first; then "aba" (-0.5) beats the right "ab"; "abab" is no piece.
TEST(TokenizerSentencePiece, MergesByScoreLeftmostFirst) {
  json vocab = json::array();  // [[piece, score], ...] by id
  for (const auto& [piece, score] : std::vector<std::pair<std::string, double>>{
           {"<unk>", 0.0}, {"a", 0.0}, {"b", 0.0}, {"ab", -1.0}, {"ba", -2.0}, {"aba", -0.5}, {"<0x63>", 0.0}})
    vocab.push_back(json::array({piece, score}));
  const json t = {{"model", {{"type", "SentencePieceBpe"}, {"unk_id", 0}, {"vocab", vocab}}}};
  EXPECT_EQ(encodeIds(t, "abab"), (Ids{5, 2}));
  EXPECT_EQ(encodeIds(t, "babcd"), (Ids{2, 3, 6, 0}));  // ab (-1) beats ba (-2); c a byte piece, d unk
}

// --- Split: behaviours and invert, on "a-b--c" (ignore_merges: a whole piece in the vocabulary
// is its id, so the ids show the pieces).

json splitTokenizer(const std::string& behavior, bool invert) {
  const json vocab = vocabOf({"a", "b", "c", "-", "a-", "b-", "-b", "-c", "--"});
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
  const json split = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
  return tokenizerJson(model, nullptr, split);
}

TEST(TokenizerSplit, Behaviors) {
  const std::pair<std::string, Ids> cases[] = {
      {"Removed", {0, 1, 2}},                 // a b c
      {"Isolated", {0, 3, 1, 3, 3, 2}},       // a - b - - c
      {"MergedWithPrevious", {4, 5, 3, 2}},   // a- b- - c
      {"MergedWithNext", {0, 6, 3, 7}},       // a -b - -c
      {"Contiguous", {0, 3, 1, 8, 2}},        // a - b -- c
  };
  for (const auto& [behavior, ids] : cases) EXPECT_EQ(encodeIds(splitTokenizer(behavior, false), "a-b--c"), ids) << behavior;
  EXPECT_EQ(encodeIds(splitTokenizer("Removed", true), "a-b--c"), (Ids{3, 3, 3}));  // inverted: keeps the dashes
}

// Llama-3 style: Split(the file's regex, Isolated) + ByteLevel(use_regex false).
TEST(TokenizerSplit, Llama3Regex) {
  const char* pattern =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const json vocab = vocabOf({"I", "'M", "\u0120", "123", "45", "\u0120ok", "\u010A\u010A", "!!"});
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
  const json pre = {{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  // I | 'M (case-insensitive contraction) | " " | 123 | 45 (digits in threes) | " ok" | "\n\n" | "!!"
  EXPECT_EQ(encodeIds(tokenizerJson(model, nullptr, pre), "I'M 12345 ok\n\n!!"), (Ids{0, 1, 2, 3, 4, 5, 6, 7}));
}

// --- Metaspace (prepend_scheme first, split) and Digits, Whitespace.

TEST(TokenizerPreTokenizers, MetaspaceDigitsWhitespace) {
  const json vocab = vocabOf({"\u2581hello", "\u2581world", "hello", "<s>", "1", "2", "12", "a", "b", ".", "ab", "\u2581"});
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
  const json meta = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", true}};
  const json added = {{{"id", 3}, {"content", "<s>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}}};
  const json t = tokenizerJson(model, nullptr, meta, nullptr, added);
  EXPECT_EQ(encodeIds(t, "hello world"), (Ids{0, 1}));
  EXPECT_EQ(encodeIds(t, "<s>hello world"), (Ids{3, 2, 1}));  // "first": only at the text's start
  json always = t;
  always["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(encodeIds(always, "<s>hello world"), (Ids{3, 0, 1}));
  const json digits = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(encodeIds(tokenizerJson(model, nullptr, digits), "12"), (Ids{4, 5}));
  const json contiguous = {{"type", "Digits"}, {"individual_digits", false}};
  EXPECT_EQ(encodeIds(tokenizerJson(model, nullptr, contiguous), "12"), (Ids{6}));
  EXPECT_EQ(encodeIds(tokenizerJson(model, nullptr, {{"type", "Whitespace"}}), " ab.  12"), (Ids{10, 9, 6}));
}

// --- Added tokens: lstrip, rstrip, single_word, normalized.

json addedTokenizer(json token, json normalizer = nullptr) {
  const json vocab = vocabOf({"a", " ", "b", "a ", " b", "<mask>", "<", "m", "s", "k", ">", "hey", " hey"});
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
  for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
    if (!token.contains(flag)) token[flag] = false;
  }
  if (!token.contains("normalized")) token["normalized"] = false;
  if (!token.contains("special")) token["special"] = true;
  return tokenizerJson(model, normalizer, nullptr, nullptr, json::array({token}));
}

TEST(TokenizerAddedTokens, StripAndSingleWord) {
  const json mask = {{"id", 5}, {"content", "<mask>"}};
  const Case cases[] = {
      {"plain", "a <mask> b", {3, 5, 4}},
      {"lstrip takes the space before", "a <mask> b", {0, 5, 4}},
      {"rstrip takes the space after", "a <mask> b", {3, 5, 2}},
  };
  EXPECT_EQ(encodeIds(addedTokenizer(mask), cases[0].text), cases[0].ids) << cases[0].what;
  json lstrip = mask, rstrip = mask, single = mask;
  lstrip["lstrip"] = true;
  rstrip["rstrip"] = true;
  single["single_word"] = true;
  EXPECT_EQ(encodeIds(addedTokenizer(lstrip), cases[1].text), cases[1].ids) << cases[1].what;
  EXPECT_EQ(encodeIds(addedTokenizer(rstrip), cases[2].text), cases[2].ids) << cases[2].what;
  // single_word: "a<mask>" has a word character before it, so it is not the token.
  EXPECT_EQ(encodeIds(addedTokenizer(single), "a<mask>"), (Ids{0, 6, 7, 0, 8, 9, 10}));
  EXPECT_EQ(encodeIds(addedTokenizer(single), "a <mask>"), (Ids{3, 5}));
}

TEST(TokenizerAddedTokens, NormalizedAndNot) {
  const json lowercase = {{"type", "Lowercase"}};
  // Not normalized: "Hey" matches the raw text only; the rest is lowercased after.
  const json raw = {{"id", 13}, {"content", "Hey"}, {"special", false}, {"normalized", false}};
  EXPECT_EQ(encodeIds(addedTokenizer(raw, lowercase), "Hey HEY"), (Ids{13, 12}));
  // Normalized: "HEY" is looked for as "hey" in the lowercased text.
  const json normalized = {{"id", 13}, {"content", "HEY"}, {"special", false}, {"normalized", true}};
  EXPECT_EQ(encodeIds(addedTokenizer(normalized, lowercase), "Hey hEY"), (Ids{13, 1, 13}));
  const auto t = HfTokenizer::fromJson(addedTokenizer(normalized, lowercase).dump(), "t/tokenizer.json");
  EXPECT_EQ(t.vocabSize(), 14);
  EXPECT_EQ(t.piece(13), "HEY");
}

// --- Normalizers: NFKC, Replace (string and regex), Prepend, StripAccents, NFC.

TEST(TokenizerNormalizers, Table) {
  const json vocab = vocabOf({"fi1", "a_b", "_x", "e", "\u00e9", "ab", "i\u0307"});
  const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}};
  const std::tuple<const char*, json, std::string, Ids> cases[] = {
      {"NFKC: the ligature and the circled digit", {{"type", "NFKC"}}, "\ufb01\u2460", {0}},
      {"Replace a regex", {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", "_"}}, "a \t b", {1}},
      {"Prepend", {{"type", "Prepend"}, {"prepend", "_"}}, "x", {2}},
      {"NFD + StripAccents", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}}}}, "\u00e9", {3}},
      {"NFC composes", {{"type", "NFC"}}, "e\u0301", {4}},
      {"NFKC + Lowercase of fullwidth", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}, {{"type", "Lowercase"}}}}}, "\uff21\uff22", {5}},
      {"Lowercase: U+0130 is i and a combining dot", {{"type", "Lowercase"}}, "\u0130", {6}},
  };
  for (const auto& [what, normalizer, text, ids] : cases) EXPECT_EQ(encodeIds(tokenizerJson(model, normalizer), text), ids) << what;
}

// --- Labels: the raw piece and a readable label.

TEST(TokenizerLabels, ByteLevelAndPlain) {
  const json byte_level = tokenizerJson({{"type", "BPE"}, {"vocab", vocabOf({"\u0120the", "\u010A", "\u00e6\u0139", "\u0120"})}, {"merges", json::array()}},
                                        nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", false}});
  const auto b = HfTokenizer::fromJson(byte_level.dump(), "t/tokenizer.json");
  EXPECT_EQ(b.label(0), "\u2423the");  // Ġthe -> ␣the
  EXPECT_EQ(b.label(1), "\u21B5");     // Ċ -> ↵
  EXPECT_EQ(b.label(2), "<0xE6><0x97>");  // two bytes of a three-byte character
  EXPECT_EQ(b.piece(0), "\u0120the");
  // In an encoded text, 日 (E6 97 A5) cut as "æĹ" + "¥" shows whole on its first piece.
  const json cut = tokenizerJson({{"type", "BPE"}, {"vocab", vocabOf({"\u00e6", "\u0139", "\u00a5", "\u00e6\u0139"})}, {"merges", {"\u00e6 \u0139"}}},
                                 nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", false}});
  std::vector<std::string> labels;
  for (const Token& token : HfTokenizer::fromJson(cut.dump(), "t/tokenizer.json").encode("\u65e5")) labels.push_back(token.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"\u65e5", "\u00b7"}));
  EXPECT_EQ(b.label(99), "");
  const json plain = tokenizerJson({{"type", "BPE"}, {"vocab", vocabOf({"\u2581the", "<0x0A>", "<0xE4>", "<0x41>"})}, {"merges", json::array()}});
  const auto p = HfTokenizer::fromJson(plain.dump(), "t/tokenizer.json");
  EXPECT_EQ(p.label(0), "\u2423the");
  EXPECT_EQ(p.label(1), "\u21B5");
  EXPECT_EQ(p.label(2), "<0xE4>");
  EXPECT_EQ(p.label(3), "A");
}

// --- Bad input: one line naming the file and the field.

TEST(TokenizerErrors, OneLineNamingFileAndField) {
  const json good = tokenizerJson({{"type", "BPE"}, {"vocab", vocabOf({"a"})}, {"merges", json::array()}});
  const auto with = [&](const std::string& pointer, json value) {
    json t = good;
    t[json::json_pointer(pointer)] = value;
    return t.dump();
  };
  const std::pair<std::string, std::string> cases[] = {
      {with("/model/type", "Unigram"), "t/tokenizer.json: model.type \"Unigram\" is not supported (BPE, WordPiece, SentencePieceBpe)"},
      {"{\"model\": ", "t/tokenizer.json: not valid JSON ("},
      {with("/model/vocab", nullptr), "t/tokenizer.json: model.vocab is missing"},
      {with("/model/merges", json::array({"a b"})), "t/tokenizer.json: model.merges[0] \"b\" is not in the vocabulary"},
      {with("/pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}}),
       "t/tokenizer.json: pre_tokenizer.pattern.Regex is not a valid regex: missing closing parenthesis at offset 2"},
      {with("/normalizer", {{"type", "Precompiled"}}),
       "t/tokenizer.json: normalizer.type \"Precompiled\" is not supported (NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, "
       "Replace, Prepend, Strip, BertNormalizer, Sequence)"},
      {with("/pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScripts"}}}}}),
       "t/tokenizer.json: pre_tokenizer.pretokenizers[0].type \"UnicodeScripts\" is not supported ("},
      {with("/post_processor", {{"type", "TemplateProcessing"}, {"single", "[CLS] $A"}, {"special_tokens", json::object()}}),
       "t/tokenizer.json: post_processor.single names \"[CLS]\", which special_tokens does not define"},
      {with("/model/type", nullptr), "t/tokenizer.json: model.type is missing"},
      {with("/model/type", 3), "t/tokenizer.json: model.type must be a string"},
  };
  for (const auto& [text, message] : cases) {
    try {
      HfTokenizer::fromJson(text, "t/tokenizer.json");
      ADD_FAILURE() << "accepted: " << message;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.substr(0, message.size()), message);
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// --- Folders: GPT-2's vocab.json + merges.txt, tokenizer_config.json's special tokens.

class TokenizerFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("attnscope_tokenizer_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(TokenizerFolder, Gpt2Files) {
  write("vocab.json", vocabOf({"h", "i", "\u0120", "hi", "\u0120h", "\u0120hi", "<|endoftext|>"}).dump());
  // "Ġ h" and "Ġh i" rank before "h i": Ġhi whole; "hi" alone by "h i".
  write("merges.txt", "#version: 0.2\n\u0120 h\n\u0120h i\nh i\n");
  const auto t = HfTokenizer::load(dir_.string());
  EXPECT_EQ(idsOf(t.encode("hi hi<|endoftext|>")), (Ids{3, 5, 6}));
  EXPECT_EQ(t.eosId(), std::optional<int64_t>(6));
  EXPECT_EQ(t.label(5), "\u2423hi");
  write("merges.txt", "h i x\n");
  try {
    HfTokenizer::load(dir_.string());
    ADD_FAILURE() << "a bad merges.txt was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "merges.txt").string() + ": line 1 must be two pieces separated by one space");
  }
}

TEST_F(TokenizerFolder, LlamaConfigAddsBosAndEos) {
  json t = llama2Style(true);
  t["post_processor"] = nullptr;
  t["added_tokens"].push_back({{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}});
  write("tokenizer.json", t.dump());
  write("tokenizer_config.json", json({{"tokenizer_class", "LlamaTokenizer"}, {"add_bos_token", true}, {"add_eos_token", true},
                                       {"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}}}, {"unk_token", "<unk>"}})
                                     .dump());
  const auto tok = HfTokenizer::load(dir_.string());
  EXPECT_EQ(idsOf(tok.encode("hi")), (Ids{1, 263, 2}));
  EXPECT_EQ(idsOf(tok.encode("hi", false)), (Ids{263}));
  EXPECT_EQ(tok.bosId(), std::optional<int64_t>(1));
  EXPECT_EQ(tok.unkId(), std::optional<int64_t>(0));
  EXPECT_EQ(tok.padId(), std::nullopt);
  std::filesystem::remove(dir_ / "tokenizer.json");
  try {
    HfTokenizer::load(dir_.string());
    ADD_FAILURE() << "a folder without tokenizer files was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": no tokenizer.json, nor GPT-2's vocab.json and merges.txt");
  }
}

}  // namespace
}  // namespace attnscope
