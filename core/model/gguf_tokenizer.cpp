// The tokenizer a GGUF file carries in its metadata (tokenizer.ggml.*), as llama.cpp reads it.
// `gpt2` (byte-level BPE by merges) becomes the tokenizer.json that says the same, read by the
// Hugging Face tokenizer (tokenizer/): its pre-tokenizer is llama.cpp's regexes for
// tokenizer.ggml.pre, applied one after another (Split, isolated), then the bytes as
// characters; control tokens are special added tokens, user-defined ones plain added tokens;
// BOS / EOS where add_bos_token / add_eos_token (or the pre-tokenizer's default) say.
// `llama` (SentencePiece by scores, byte fallback) becomes a Prepend / Replace "▁" normalizer
// and attnscope's SentencePieceBpe model (tokenizer/models.cpp), as llama.cpp's SPM tokenizes;
// `bert` (WordPiece) becomes BERT's tokenizer.json with the converter's "▁" pieces turned back.
#include "model/gguf_tokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

using nlohmann::json;

// llama.cpp's llm_tokenizer_bpe regexes by tokenizer.ggml.pre (src/llama-vocab.cpp, v0.5.0);
// llama3 also takes a word that is a token whole (ignore_merges) and adds BOS by default.
struct PreRow {
  const char* names;  // the tokenizer.ggml.pre values, '|'-separated
  std::vector<const char*> regexes;
  bool ignore_merges, add_bos;
};

const char* kGpt2Words = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

const std::vector<PreRow>& preRows() {
  static const std::vector<PreRow> rows = {
      {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Words, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
      {"llama3|llama-v3|llama-bpe",
       {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true, true},
      {"qwen2",
       {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       false, false},
      {"gpt-2|olmo", {kGpt2Words}, false, false},
      {"smollm", {"\\p{N}", kGpt2Words}, false, false},
  };
  return rows;
}

const PreRow& preRow(const GgufFile& f, const std::string& pre) {
  std::string known;
  for (const PreRow& row : preRows()) {
    const std::string names = std::string("|") + row.names + "|";
    if (names.find("|" + pre + "|") != std::string::npos) return row;
    known += (known.empty() ? "" : ", ") + std::string(row.names);
  }
  f.fail("metadata key tokenizer.ggml.pre is \"" + pre + "\" but attnscope reads " + known);
}

std::vector<std::string> strings(const GgufFile& f, const std::string& key) {
  std::vector<std::string> out;
  for (const GgufValue& v : f.array(key, GgufType::String).items) out.push_back(v.s);
  return out;
}

// tokenizer.ggml.<key>_token_id, else llama.cpp's default for the vocabulary kind (-1: none).
std::optional<int64_t> tokenId(const GgufFile& f, const std::string& key, int64_t vocab, int64_t fallback = -1) {
  const std::string name = "tokenizer.ggml." + key + "_token_id";
  if (!f.find(name)) return fallback >= 0 && fallback < vocab ? std::optional<int64_t>(fallback) : std::nullopt;
  const int64_t id = f.integer(name);
  if (id < 0 || id >= vocab) f.fail("metadata key " + name + " is " + std::to_string(id) + ", outside the vocabulary");
  return id;
}

// TemplateProcessing with the file's BOS before and EOS after a sequence.
json bosEosTemplate(const std::vector<std::string>& tokens, std::optional<int64_t> bos, std::optional<int64_t> eos) {
  json single = json::array(), specials = json::object();
  auto special = [&](int64_t id) {
    specials[tokens[id]] = {{"id", tokens[id]}, {"ids", {id}}, {"tokens", {tokens[id]}}};
    return json{{"SpecialToken", {{"id", tokens[id]}, {"type_id", 0}}}};
  };
  if (bos) single.push_back(special(*bos));
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) single.push_back(special(*eos));
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", single}, {"special_tokens", specials}};
}

// What every vocabulary kind reads alike: the pieces, their types and the added tokens.
struct Vocabulary {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;  // tokenizer.ggml.token_type (1 NORMAL, 3 CONTROL, 4 USER_DEFINED, ...)
  json added = json::array();

  explicit Vocabulary(const GgufFile& f) : tokens(strings(f, "tokenizer.ggml.tokens")), types(tokens.size(), 1) {
    const int64_t V = size();
    if (f.find("tokenizer.ggml.token_type")) {
      const auto& items = f.array("tokenizer.ggml.token_type", GgufType::I32).items;
      if (static_cast<int64_t>(items.size()) != V) f.fail("metadata key tokenizer.ggml.token_type has " + std::to_string(items.size()) + " entries for " + std::to_string(V) + " tokens");
      for (int64_t i = 0; i < V; ++i) types[i] = items[i].i;
    }
    for (int64_t i = 0; i < V; ++i) {
      if (types[i] == 3 || types[i] == 4)  // CONTROL, USER_DEFINED
        added.push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == 3}, {"normalized", false},
                         {"single_word", false}, {"lstrip", false}, {"rstrip", false}});
    }
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  // BOS / EOS where add_bos_token / add_eos_token say; the defaults are the kind's, as llama.cpp's.
  json bosEos(const GgufFile& f, int64_t bos_default, int64_t eos_default, bool add_bos_default) const {
    const auto bos = tokenId(f, "bos", size(), bos_default), eos = tokenId(f, "eos", size(), eos_default);
    const bool add_bos = f.boolean("tokenizer.ggml.add_bos_token", add_bos_default) && bos;
    const bool add_eos = f.boolean("tokenizer.ggml.add_eos_token", false) && eos;
    return bosEosTemplate(tokens, add_bos ? bos : std::nullopt, add_eos ? eos : std::nullopt);
  }
};

json gpt2TokenizerJson(const GgufFile& f) {
  // No merges: every token is a byte or a whole piece (a vocabulary of bytes).
  const std::vector<std::string> merges = f.find("tokenizer.ggml.merges") ? strings(f, "tokenizer.ggml.merges") : std::vector<std::string>{};
  const PreRow& pre = preRow(f, f.string("tokenizer.ggml.pre", "default"));
  const Vocabulary v(f);
  json vocab = json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab[v.tokens[i]] = i;
  json steps = json::array();
  for (const char* regex : pre.regexes)
    steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}});
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", pre.ignore_merges}}},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", steps}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"post_processor", v.bosEos(f, -1, -1, pre.add_bos)},
          {"added_tokens", v.added}};
}

// SentencePiece (llama.cpp's SPM): each stretch of text between added tokens gets a leading
// space where tokenizer.ggml.add_space_prefix says (default true), every space becomes "▁",
// then the pieces merge by tokenizer.ggml.scores; BOS (default id 1) added by default.
json llamaTokenizerJson(const GgufFile& f) {
  const Vocabulary v(f);
  const int64_t V = v.size();
  std::vector<double> scores(v.tokens.size(), 0.0);
  if (f.find("tokenizer.ggml.scores")) {
    const auto& items = f.array("tokenizer.ggml.scores", GgufType::F32).items;
    if (items.size() < v.tokens.size()) f.fail("metadata key tokenizer.ggml.scores has " + std::to_string(items.size()) + " entries for " + std::to_string(V) + " tokens");
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = items[i].f;
  }
  json vocab = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab.push_back({v.tokens[i], scores[i]});
  json model = {{"type", "SentencePieceBpe"}, {"vocab", vocab}};
  if (const auto unk = tokenId(f, "unknown", V, 0)) model["unk_id"] = *unk;
  json normalizers = json::array();
  if (f.boolean("tokenizer.ggml.add_space_prefix", true)) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
  return {{"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
          {"model", model},
          {"post_processor", v.bosEos(f, 1, 2, true)},
          {"added_tokens", v.added}};
}

// WordPiece (llama.cpp's WPM): the converter wrote a word's first piece as "▁piece" and a
// continuation "##piece" as "piece"; turned back, it is BERT's pipeline: llama.cpp's
// preprocess (drop controls, lowercase and strip accents by tokenizer.ggml.normalizer.*, both
// true by default; split at whitespace, punctuation, ASCII symbols and CJK characters) as
// BertNormalizer + BertPreTokenizer, the longest pieces from the left (a word with a piece
// missing is one unk token), always [CLS] (bos, default 101) ... [SEP] (seperator, default 102).
json bertTokenizerJson(const GgufFile& f) {
  const Vocabulary v(f);
  json vocab = json::object();
  const std::string phantom = "\u2581";
  for (int64_t i = 0; i < v.size(); ++i) {
    const std::string& t = v.tokens[i];
    const bool first = t.compare(0, phantom.size(), phantom) == 0;
    vocab[v.types[i] == 3 ? t : first ? t.substr(phantom.size()) : "##" + t] = i;
  }
  const auto unk = tokenId(f, "unknown", v.size(), 100);
  if (!unk) f.fail("metadata key tokenizer.ggml.unknown_token_id is missing (a WordPiece vocabulary needs one)");
  json model = {{"type", "WordPiece"}, {"vocab", vocab}, {"unk_token", v.tokens[*unk]}, {"continuing_subword_prefix", "##"},
                {"max_input_chars_per_word", int64_t{1} << 30}};
  const bool lower = f.boolean("tokenizer.ggml.normalizer.lowercase", true);
  const json normalizer = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                           {"lowercase", lower}, {"strip_accents", f.boolean("tokenizer.ggml.normalizer.strip_accents", lower)}};
  return {{"normalizer", normalizer},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model", model},
          {"post_processor", bosEosTemplate(v.tokens, tokenId(f, "bos", v.size(), 101), tokenId(f, "seperator", v.size(), 102))},
          {"added_tokens", v.added}};
}

}  // namespace

std::optional<HfTokenizer> ggufTokenizer(const GgufFile& f) {
  // tokenizer.ggml.model -> the tokenizer.json that says the same; any other ("none") runs on ids.
  static const std::pair<const char*, json (*)(const GgufFile&)> kKinds[] = {
      {"gpt2", gpt2TokenizerJson}, {"llama", llamaTokenizerJson}, {"bert", bertTokenizerJson}};
  const std::string kind = f.string("tokenizer.ggml.model", "none");
  const auto* row = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& k) { return kind == k.first; });
  if (row == std::end(kKinds)) return std::nullopt;
  const json j = row->second(f);
  return HfTokenizer::fromJson(j.dump(-1, ' ', false, json::error_handler_t::replace), f.path() + " (tokenizer.ggml.*)");
}

}  // namespace attnscope
