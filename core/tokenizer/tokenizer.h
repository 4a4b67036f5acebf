// Hugging Face tokenizers, encoded in C++ as the `tokenizers` library encodes them (docs/models.md,
// "Tokenizers"): FOLDER/tokenizer.json (BPE or WordPiece with its normalizer, pre-tokenizer,
// post-processor and added tokens), or GPT-2's original FOLDER/vocab.json + FOLDER/merges.txt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

// Readable-label marks (docs/models.md, "Tokenizers"): what a label shows for a space and a newline
// that the raw piece spells as "Ġ"/"▁" and "Ċ"/"<0x0A>".
inline constexpr const char* kSpaceMark = "\u2423";    // "␣"
inline constexpr const char* kNewlineMark = "\u21B5";  // "↵"
inline constexpr const char* kTabMark = "\u21E5";      // "⇥"
// A piece whose bytes continue the character the piece before it shows whole (byte fallback:
// "世" = <0xE4> <0xB8> <0x96> reads "世", "·", "·").
inline constexpr const char* kContinuationMark = "\u00B7";  // "·"

// Columns a text takes in a terminal (utf8proc's character widths: "␣" 1, "世" 2, a combining
// mark 0): the CLI aligns labels by it, not by their bytes.
int64_t displayWidth(const std::string& utf8);

struct Token {
  int64_t id = 0;
  std::string piece;     // the vocabulary's raw string ("Ġthe", "▁the", "##ing", "<0x0A>")
  std::string label;     // readable: "␣the", "the", "↵", a byte-fallback character as itself, "·"
  std::string source;    // an unknown token's word of the text ("" for the others)
  bool special = false;  // an added special token (BOS, [CLS], ...)
  bool unknown = false;  // the model's unk token
};

// At most max_tokens tokens, the special tokens the tokenizer adds (BOS, [CLS] ... [SEP])
// included: the text's first tokens, or with keep_last its last.
struct EncodeLimit {
  size_t max_tokens = SIZE_MAX;
  bool keep_last = false;
};

struct TokenizerImpl;

class HfTokenizer {
 public:
  // Loads FOLDER/tokenizer.json (+ tokenizer_config.json / special_tokens_map.json where they
  // add special tokens), or GPT-2's FOLDER/vocab.json + FOLDER/merges.txt. Throws InputError
  // ("FOLDER/tokenizer.json: <problem>") on bad input.
  static HfTokenizer load(const std::string& folder);
  // The same from tokenizer.json's text; `path` only names the file in errors.
  static HfTokenizer fromJson(const std::string& json_text, const std::string& path);

  // ids equal Hugging Face `tokenizer(text)["input_ids"]` (add_special_tokens = true by default).
  std::vector<Token> encode(const std::string& text, bool add_special_tokens = true) const;
  // The same within a limit (add_special_tokens = true); *cut: whether tokens were dropped.
  // Keeping the first tokens stops reading the text once the limit is passed.
  std::vector<Token> encode(const std::string& text, const EncodeLimit& limit, bool* cut) const;
  int64_t vocabSize() const;            // largest id + 1 (vocab plus added tokens)
  std::string piece(int64_t id) const;  // raw vocabulary string of an id ("" if out of range)
  std::string label(int64_t id) const;  // readable label of an id (predictions panel)
  // Readable labels of a sequence of ids, as encode labels its tokens ("" for an id without piece).
  std::vector<std::string> labels(const std::vector<int64_t>& ids) const;
  std::optional<int64_t> bosId() const;
  std::optional<int64_t> eosId() const;
  std::optional<int64_t> padId() const;
  std::optional<int64_t> unkId() const;

 private:
  explicit HfTokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;  // immutable after loading: copies share it
};

}  // namespace attnscope
