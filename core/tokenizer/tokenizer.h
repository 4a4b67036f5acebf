// Hugging Face tokenizers, encoded in C++ as the `tokenizers` library encodes them (docs/models.md,
// "Tokenizers"): FOLDER/tokenizer.json (BPE or WordPiece with its normalizer, pre-tokenizer,
// post-processor and added tokens), or GPT-2's original FOLDER/vocab.json + FOLDER/merges.txt.
#pragma once

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

struct Token {
  int64_t id = 0;
  std::string piece;     // the vocabulary's raw string ("Ġthe", "▁the", "##ing", "<0x0A>")
  std::string label;     // readable: "␣the", "the", "↵", a byte-fallback character as itself
  bool special = false;  // an added special token (BOS, [CLS], ...)
  bool unknown = false;  // the model's unk token
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
  int64_t vocabSize() const;            // largest id + 1 (vocab plus added tokens)
  std::string piece(int64_t id) const;  // raw vocabulary string of an id ("" if out of range)
  std::string label(int64_t id) const;  // readable label of an id (predictions panel)
  std::optional<int64_t> bosId() const;
  std::optional<int64_t> eosId() const;
  std::optional<int64_t> padId() const;
  std::optional<int64_t> unkId() const;

 private:
  explicit HfTokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;  // immutable after loading: copies share it
};

}  // namespace attnscope
