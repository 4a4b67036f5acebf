#include "model/char_vocab.h"

#include <cstdio>

#include "tensor/utf8.h"

namespace attnscope {
namespace {

std::string byteLabel(int64_t b) {
  if (b >= 0x20 && b < 0x7f) return std::string(1, static_cast<char>(b));
  if (b < 0x20) return escapeToken(std::string(1, static_cast<char>(b)));
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(b));  // not UTF-8 on its own
  return buf;
}

}  // namespace

CharVocab::CharVocab(Kind kind, std::vector<std::string> entries, int64_t unk_id, const std::string& path)
    : kind_(kind), unk_id_(unk_id), vocab_(std::move(entries)) {
  if (kind != Kind::Chars) return;
  for (size_t id = 0; id < vocab_.size(); ++id) {
    const std::string& entry = vocab_[id];
    if (utf8Characters(entry).size() != 1) {
      if (static_cast<int64_t>(id) == unk_id) continue;  // the unknown token's label ("<unk>") is never matched
      throw InputError(path + ": entry " + std::to_string(id) + " (\"" + escapeToken(entry) +
                       "\") is not one character (the chars tokenizer maps one character to one id)");
    }
    if (!char_ids_.emplace(entry, static_cast<int64_t>(id)).second)
      throw InputError(path + ": entry " + std::to_string(id) + " (\"" + escapeToken(entry) + "\") repeats entry " +
                       std::to_string(char_ids_[entry]));
  }
}

std::string CharVocab::label(int64_t id) const {
  if (kind_ == Kind::Bytes && id < 256) return byteLabel(id);
  return escapeToken(vocab_.at(id));
}

ModelTokens CharVocab::encode(const std::string& text) const {
  ModelTokens t;
  const int64_t V = static_cast<int64_t>(vocab_.size());
  if (kind_ == Kind::Bytes) {
    for (unsigned char byte : text) {
      const bool known = byte < V;
      t.ids.push_back(known ? byte : unk_id_);
      t.text.emplace_back(1, static_cast<char>(byte));
      t.label.push_back(byteLabel(byte));
      t.unknown.push_back(known ? 0 : 1);
    }
    return t;
  }
  for (std::string& ch : utf8Characters(text)) {
    const auto it = char_ids_.find(ch);
    const int64_t id = it == char_ids_.end() ? unk_id_ : it->second;
    t.ids.push_back(id);
    // The unknown id is unknown even when its vocabulary entry is a character that matched
    // (python-code's "\uFFFD": what a text box makes of an emoji it cannot hold).
    t.unknown.push_back(id == unk_id_ ? 1 : 0);
    t.label.push_back(escapeToken(ch));
    t.text.push_back(std::move(ch));
  }
  return t;
}

}  // namespace attnscope
