// attnscope-model/1's tokenizers (docs/models.md, "Model folders"): one token per UTF-8
// character (chars: vocab.json lists the characters) or per byte (bytes: ids 0-255 are the
// bytes; vocab.json optional). A character outside the vocabulary becomes unk_id and is
// flagged unknown, as is a character that matches the unknown id's own entry (a vocabulary
// whose unknown entry is "\uFFFD").
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model_run.h"

namespace attnscope {

class CharVocab {
 public:
  enum class Kind { Chars, Bytes };
  // vocab.json's entries (id = index; `path` names it in errors): InputError when a chars
  // entry is not one character (except the unknown id's) or repeats another.
  CharVocab(Kind kind, std::vector<std::string> entries, int64_t unk_id, const std::string& path);

  ModelTokens encode(const std::string& text) const;
  std::string label(int64_t id) const;  // one printable line: the character escaped, "a", "\\n", "\\xc3"
  const std::string& entry(int64_t id) const { return vocab_.at(id); }  // vocab.json's entry (bytes: the byte)
  int64_t unkId() const { return unk_id_; }
  const char* unit() const { return kind_ == Kind::Chars ? "characters" : "bytes"; }

 private:
  Kind kind_ = Kind::Chars;
  int64_t unk_id_ = 0;
  std::vector<std::string> vocab_;                     // [V]
  std::unordered_map<std::string, int64_t> char_ids_;  // chars: character -> id
};

}  // namespace attnscope
