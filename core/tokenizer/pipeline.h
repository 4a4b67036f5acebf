// The stages of a tokenizer.json pipeline, in the order Hugging Face's `tokenizers` runs them:
// added tokens -> normalizer -> pre-tokenizer -> model -> post-processor. Each stage kind is one
// row in its registry (normalizers.cpp, pre_tokenizers.cpp, models.cpp, post_processors.cpp).
// Internal to core/tokenizer/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace attnscope::tok {

using nlohmann::json;

// A JSON node with its place: errors read "FILE: FIELD <problem>" (one line).
struct Node {
  const json& value;
  std::string file;   // "m/tokenizer.json"
  std::string field;  // "pre_tokenizer.pretokenizers[1]"

  Node at(const std::string& key) const;  // child (null when absent)
  Node at(size_t index) const;
  [[noreturn]] void fail(const std::string& problem) const;
  bool has(const std::string& key) const;
  const json& object() const;  // the value, which must be an object
  std::string string(const std::string& key) const;  // required string member
  std::string string(const std::string& key, const std::string& fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  // The "type" member, refused unless it is one of `supported` ("X is not supported (A, B)").
  std::string type(const std::vector<std::string>& supported) const;
};

// A piece of text on its way through the pipeline. `at_origin`: it starts at byte 0 of the
// user's text (Metaspace's prepend_scheme "first" prepends only there).
struct Piece {
  std::string text;
  bool at_origin = false;
};

using Normalizer = std::function<std::string(const std::string&)>;
using PreTokenizer = std::function<std::vector<Piece>(std::vector<Piece>)>;

// BPE or WordPiece: one pre-tokenized word -> ids (appended to `out`).
class Model {
 public:
  virtual ~Model() = default;
  virtual void tokenize(const std::string& word, std::vector<int64_t>& out) const = 0;
  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
  std::optional<int64_t> unkId() const { return unk_id_; }

 protected:
  std::unordered_map<std::string, int64_t> vocab_;
  std::optional<int64_t> unk_id_;
};

// Inserts the special tokens of a template around the model's ids (add_special_tokens).
struct SpecialPiece {
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
};
using PostProcessor = std::function<std::vector<Token>(std::vector<Token>)>;

std::unique_ptr<Model> makeModel(const Node& model);
// GPT-2's original files: vocab.json ({"piece": id}) and merges.txt ("a b" lines).
std::unique_ptr<Model> makeGpt2Model(const Node& vocab, const std::string& merges_text, const std::string& merges_file);
Normalizer makeNormalizer(const Node& node);
PreTokenizer makePreTokenizer(const Node& node);
PostProcessor makePostProcessor(const Node& node);
// [bos] $A [eos] (tokenizer_config.json's add_bos_token / add_eos_token).
PostProcessor makeBosEosProcessor(std::vector<SpecialPiece> before, std::vector<SpecialPiece> after);
// The ByteLevel pre-tokenizer on its own (GPT-2's vocab.json + merges.txt folders).
PreTokenizer makeGpt2PreTokenizer();

// Readable labels (docs/models.md, "Tokenizers").
enum class PieceStyle { ByteLevel, Plain };
std::string readableLabel(const std::string& piece, PieceStyle style);
// Labels of an encoded sequence: as readableLabel, except that a character cut across pieces
// (byte fallback, byte-level pieces) shows whole on the piece where it starts; a piece whose
// bytes all went to the piece before shows kContinuationMark. Special pieces stay as they are.
std::vector<std::string> readableLabels(const std::vector<std::string>& pieces, const std::vector<bool>& special,
                                        PieceStyle style);

}  // namespace attnscope::tok

namespace attnscope::tok {

// One row of a stage registry: the tokenizer.json "type" and what builds it.
template <typename Stage>
struct Kind {
  const char* type;
  Stage (*make)(const Node& node);
};

template <typename Stage, size_t N>
Stage makeFromRegistry(const Node& node, const Kind<Stage> (&registry)[N]) {
  std::vector<std::string> names;
  for (const auto& kind : registry) names.emplace_back(kind.type);
  const std::string type = node.type(names);
  for (const auto& kind : registry) {
    if (type == kind.type) return kind.make(node);
  }
  return {};  // unreachable: type() refused every other name
}

// Normalizers and pre-tokenizers never grow a text much (NFKC: at most 18 characters for
// one); a file whose steps do (ByteLevel after ByteLevel, Replace with a long content) is
// refused at that step: "WHERE grows the text more than 64 times".
void checkGrowth(size_t before, size_t after, const std::string& where);

// A Sequence's list of steps, each built by the registry.
template <typename Stage, size_t N>
std::vector<Stage> makeListFromRegistry(const Node& list, const Kind<Stage> (&registry)[N]) {
  if (!list.value.is_array()) list.fail(list.value.is_null() ? "is missing" : "must be a list");
  std::vector<Stage> steps;
  for (size_t i = 0; i < list.value.size(); ++i) steps.push_back(makeFromRegistry(list.at(i), registry));
  return steps;
}

// A Split/Replace "pattern": {"String": s} or {"Regex": r}.
class Regex;
Regex patternOf(const Node& pattern);

}  // namespace attnscope::tok
