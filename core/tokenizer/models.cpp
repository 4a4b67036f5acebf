// The models of tokenizer.json, one row each in kModels: BPE (models/bpe/model.rs, word.rs),
// WordPiece (models/wordpiece/mod.rs) and attnscope's SentencePieceBpe (a GGUF file's `llama`
// vocabulary: pieces merged by their scores, as llama.cpp's llm_tokenizer_spm does).
#include <cstdio>
#include <queue>
#include <sstream>

#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace attnscope::tok {
namespace {

constexpr int64_t kMaxId = (int64_t{1} << 31) - 1;

std::unordered_map<std::string, int64_t> readVocab(const Node& node) {
  if (!node.value.is_object()) node.fail(node.value.is_null() ? "is missing" : "must be an object {\"piece\": id}");
  std::unordered_map<std::string, int64_t> vocab;
  for (const auto& [piece, id] : node.value.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxId) {
      node.fail("\"" + piece + "\" must have an id in [0, 2^31)");
    }
    vocab[piece] = id.get<int64_t>();
  }
  return vocab;
}

class Bpe : public Model {
 public:
  struct Options {
    std::string unk_token, prefix, suffix;
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  };

  Bpe(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      Options options, const Node& where)
      : options_(std::move(options)) {
    vocab_ = std::move(vocab);
    if (!options_.unk_token.empty()) {
      const auto it = vocab_.find(options_.unk_token);
      if (it == vocab_.end()) where.at("unk_token").fail("\"" + options_.unk_token + "\" is not in the vocabulary");
      unk_id_ = it->second;
    }
    for (size_t rank = 0; rank < merges.size(); ++rank) addMerge(merges[rank], rank, where.at("merges").at(rank));
  }

  void tokenize(const std::string& word, std::vector<int64_t>& out) const override {
    if (options_.ignore_merges) {
      const auto it = vocab_.find(word);
      if (it != vocab_.end()) return out.push_back(it->second);
    }
    std::vector<Symbol> symbols = initialSymbols(word);
    mergeAll(symbols);
    for (const Symbol& s : symbols) {
      if (!s.removed) out.push_back(s.id);
    }
  }

 private:
  struct Symbol {
    int64_t id;
    int prev, next;
    bool removed = false;
  };
  struct Merge {
    uint32_t rank;
    int64_t new_id;
  };
  static uint64_t key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b); }

  void addMerge(const std::pair<std::string, std::string>& merge, size_t rank, const Node& where) {
    const auto& [a, b] = merge;
    const bool prefixed = b.compare(0, options_.prefix.size(), options_.prefix) == 0;
    const std::string merged = a + (prefixed ? b.substr(options_.prefix.size()) : b);
    for (const std::string* token : {&a, &b, &merged}) {
      if (!vocab_.count(*token)) where.fail("\"" + *token + "\" is not in the vocabulary");
    }
    merges_[key(vocab_.at(a), vocab_.at(b))] = Merge{static_cast<uint32_t>(rank), vocab_.at(merged)};
  }

  // One symbol per character (model.rs merge_word): unknown characters become byte-fallback
  // pieces <0xNN>, or the unk token (fused when fuse_unk), or nothing without an unk token.
  std::vector<Symbol> initialSymbols(const std::string& word) const {
    std::vector<int64_t> ids;
    std::optional<int64_t> pending_unk;
    for (size_t i = 0; i < word.size();) {
      const size_t n = std::min(utf8Length(static_cast<unsigned char>(word[i])), word.size() - i);
      std::string s = word.substr(i, n);
      if (i > 0) s = options_.prefix + s;
      if (i + n == word.size()) s += options_.suffix;
      i += n;
      const auto it = vocab_.find(s);
      if (it != vocab_.end()) {
        if (pending_unk) ids.push_back(*pending_unk);
        pending_unk.reset();
        ids.push_back(it->second);
      } else if (options_.byte_fallback && appendBytes(s, ids)) {
        continue;
      } else if (unk_id_) {
        if (pending_unk && !options_.fuse_unk) ids.push_back(*pending_unk);
        pending_unk = unk_id_;
      }
    }
    if (pending_unk) ids.push_back(*pending_unk);
    std::vector<Symbol> symbols;
    for (size_t i = 0; i < ids.size(); ++i) {
      symbols.push_back({ids[i], static_cast<int>(i) - 1, i + 1 < ids.size() ? static_cast<int>(i) + 1 : -1});
    }
    return symbols;
  }

  // <0xNN> for every byte of s, all or nothing.
  bool appendBytes(const std::string& s, std::vector<int64_t>& ids) const {
    std::vector<int64_t> bytes;
    for (const char c : s) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<unsigned char>(c));
      const auto it = vocab_.find(name);
      if (it == vocab_.end()) return false;
      bytes.push_back(it->second);
    }
    ids.insert(ids.end(), bytes.begin(), bytes.end());
    return true;
  }

  // word.rs merge_all: the lowest-ranked pair first, the leftmost among equal ranks.
  void mergeAll(std::vector<Symbol>& symbols) const {
    struct Candidate {
      uint32_t rank;
      int pos;
      int64_t new_id;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto push = [&](int left) {
      const int right = symbols[static_cast<size_t>(left)].next;
      if (right < 0) return;
      const auto it = merges_.find(key(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
      if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
    };
    for (size_t i = 0; i + 1 < symbols.size(); ++i) push(static_cast<int>(i));
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = symbols[static_cast<size_t>(top.pos)];
      if (left.removed || left.next < 0) continue;
      Symbol& right = symbols[static_cast<size_t>(left.next)];
      const auto it = merges_.find(key(left.id, right.id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // an expired entry
      left.id = top.new_id;
      right.removed = true;
      left.next = right.next;
      if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
      if (left.prev >= 0) push(left.prev);
      push(top.pos);
    }
  }

  Options options_;
  std::unordered_map<uint64_t, Merge> merges_;
};

// "a b" (legacy) or ["a", "b"].
std::vector<std::pair<std::string, std::string>> readMerges(const Node& node) {
  if (!node.value.is_array()) node.fail(node.value.is_null() ? "is missing" : "must be a list");
  std::vector<std::pair<std::string, std::string>> merges;
  for (size_t i = 0; i < node.value.size(); ++i) {
    const json& m = node.value[i];
    if (m.is_string()) {
      const std::string line = m.get<std::string>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        node.at(i).fail("must be two pieces separated by one space, got \"" + line + "\"");
      }
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      node.at(i).fail("must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  return merges;
}

std::unique_ptr<Model> makeBpe(const Node& node) {
  if (node.has("dropout") && !node.at("dropout").value.is_number()) node.at("dropout").fail("must be a number or null");
  Bpe::Options options;
  options.unk_token = node.string("unk_token", "");
  options.prefix = node.string("continuing_subword_prefix", "");
  options.suffix = node.string("end_of_word_suffix", "");
  options.fuse_unk = node.boolean("fuse_unk", false);
  options.byte_fallback = node.boolean("byte_fallback", false);
  options.ignore_merges = node.boolean("ignore_merges", false);
  return std::make_unique<Bpe>(readVocab(node.at("vocab")), readMerges(node.at("merges")), options, node);
}

class WordPiece : public Model {
 public:
  explicit WordPiece(const Node& node)
      : prefix_(node.string("continuing_subword_prefix", "##")),
        max_chars_(node.integer("max_input_chars_per_word", 100)) {
    vocab_ = readVocab(node.at("vocab"));
    const std::string unk = node.string("unk_token", "[UNK]");
    const auto it = vocab_.find(unk);
    if (it == vocab_.end()) node.at("unk_token").fail("\"" + unk + "\" is not in the vocabulary");
    unk_id_ = it->second;
    for (const auto& [piece, id] : vocab_) longest_ = std::max(longest_, piece.size());
  }

  // Greedy longest match from the left; one unknown piece makes the whole word unk. (A
  // candidate longer than the longest piece cannot match: the search starts at that length.)
  void tokenize(const std::string& word, std::vector<int64_t>& out) const override {
    if (static_cast<int64_t>(decodeUtf8(word).size()) > max_chars_) return out.push_back(*unk_id_);
    std::vector<int64_t> ids;
    for (size_t start = 0; start < word.size();) {
      size_t end = std::min(word.size(), start + longest_);
      while (end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
      std::optional<int64_t> found;
      while (start < end) {
        const std::string sub = (start > 0 ? prefix_ : "") + word.substr(start, end - start);
        const auto it = vocab_.find(sub);
        if (it != vocab_.end()) {
          found = it->second;
          break;
        }
        do --end;  // back one character
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (!found) return out.push_back(*unk_id_);
      ids.push_back(*found);
      start = end;
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }

 private:
  std::string prefix_;
  int64_t max_chars_;
  size_t longest_ = 0;  // bytes of the longest vocabulary piece
};

// SentencePiece's BPE by scores, as llama.cpp's llm_tokenizer_spm_session runs it
// (src/llama-vocab.cpp): one symbol per character; the adjacent pair whose concatenation is a
// piece with the highest score merges first (the leftmost among equal scores), until none is
// left; a symbol that is no piece becomes its bytes' <0xXX> pieces (else the single-byte piece,
// else unk). Every merged symbol is a piece, so llama.cpp's resegment step reduces to that.
// JSON: {"type": "SentencePieceBpe", "vocab": [[piece, score], ...] by id, "unk_id": id}.
class SentencePieceBpe : public Model {
 public:
  explicit SentencePieceBpe(const Node& node) {
    const Node list = node.at("vocab");
    if (!list.value.is_array()) list.fail(list.value.is_null() ? "is missing" : "must be a list of [piece, score]");
    for (size_t id = 0; id < list.value.size(); ++id) {
      const json& entry = list.value[id];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
        list.at(id).fail("must be [piece, score]");
      vocab_[entry[0].get<std::string>()] = static_cast<int64_t>(id);
      scores_.push_back(entry[1].get<float>());
    }
    if (node.has("unk_id")) {
      const int64_t unk = node.integer("unk_id", 0);
      if (unk < 0 || unk >= static_cast<int64_t>(scores_.size())) node.at("unk_id").fail("is outside the vocabulary");
      unk_id_ = unk;
    }
  }

  void tokenize(const std::string& word, std::vector<int64_t>& out) const override {
    std::vector<Symbol> symbols;
    for (size_t at = 0; at < word.size();) {
      const size_t n = std::min(utf8Length(static_cast<unsigned char>(word[at])), word.size() - at);
      const int index = static_cast<int>(symbols.size());
      symbols.push_back({at, n, index - 1, at + n == word.size() ? -1 : index + 1});
      at += n;
    }
    std::priority_queue<Bigram> queue;
    const auto tryPair = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const Symbol& a = symbols[static_cast<size_t>(left)];
      const auto it = vocab_.find(word.substr(a.start, a.n + symbols[static_cast<size_t>(right)].n));
      if (it != vocab_.end()) queue.push({scores_[static_cast<size_t>(it->second)], left, right, a.n + symbols[static_cast<size_t>(right)].n});
    };
    for (size_t i = 1; i < symbols.size(); ++i) tryPair(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue.empty()) {
      const Bigram top = queue.top();
      queue.pop();
      Symbol& left = symbols[static_cast<size_t>(top.left)];
      Symbol& right = symbols[static_cast<size_t>(top.right)];
      if (left.n == 0 || right.n == 0 || left.n + right.n != top.size) continue;  // merged since
      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.left;
      tryPair(left.prev, top.left);
      tryPair(top.left, left.next);
    }
    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
      const std::string text = word.substr(symbols[static_cast<size_t>(i)].start, symbols[static_cast<size_t>(i)].n);
      const auto it = vocab_.find(text);
      if (it != vocab_.end()) out.push_back(it->second);
      else for (const char c : text) appendByte(static_cast<unsigned char>(c), out);
    }
  }

 private:
  struct Symbol {
    size_t start, n;  // bytes of the word; n = 0 once merged into the symbol on its left
    int prev, next;
  };
  struct Bigram {
    float score;
    int left, right;
    size_t size;
    bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
  };

  void appendByte(unsigned char byte, std::vector<int64_t>& out) const {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    auto it = vocab_.find(name);
    if (it == vocab_.end()) it = vocab_.find(std::string(1, static_cast<char>(byte)));
    if (it != vocab_.end()) out.push_back(it->second);
    else if (unk_id_) out.push_back(*unk_id_);
  }

  std::vector<float> scores_;  // by id
};

using ModelPtr = std::unique_ptr<Model>;
const Kind<ModelPtr> kModels[] = {
    {"BPE", makeBpe},
    {"WordPiece", [](const Node& node) -> ModelPtr { return std::make_unique<WordPiece>(node); }},
    {"SentencePieceBpe", [](const Node& node) -> ModelPtr { return std::make_unique<SentencePieceBpe>(node); }},
};

}  // namespace

std::unique_ptr<Model> makeModel(const Node& node) { return makeFromRegistry(node, kModels); }

std::unique_ptr<Model> makeGpt2Model(const Node& vocab, const std::string& merges_text, const std::string& merges_file) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::istringstream lines(merges_text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      throw InputError(merges_file + ": line " + std::to_string(number) + " must be two pieces separated by one space");
    }
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  const json empty = json::object();
  return std::make_unique<Bpe>(readVocab(vocab), merges, Bpe::Options{}, Node{empty, merges_file, ""});
}

}  // namespace attnscope::tok
