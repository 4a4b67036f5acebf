// HfTokenizer: loading a folder's tokenizer files and the encode pipeline (tokenizer/mod.rs
// encode_single_sequence): added tokens -> normalizer -> added tokens of normalized form ->
// pre-tokenizer -> model -> post-processor.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "tensor/text_file.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace attnscope {

namespace fs = std::filesystem;
using tok::json;
using tok::Node;

struct TokenizerImpl {
  std::string path;  // tokenizer.json, or vocab.json for GPT-2's files
  std::unique_ptr<tok::Model> model;
  tok::Normalizer normalizer;       // empty: none
  tok::PreTokenizer pre_tokenizer;  // empty: none
  tok::PostProcessor post_processor;
  std::vector<tok::AddedToken> added;
  std::unordered_map<std::string, size_t> added_index;  // content -> its place in `added`
  tok::AddedMatcher raw_matcher, normalized_matcher;
  std::unordered_map<int64_t, std::string> pieces;  // by id (ids may leave gaps)
  std::unordered_set<int64_t> special;              // ids of added special tokens
  int64_t size = 0;                                 // largest id + 1
  tok::PieceStyle style = tok::PieceStyle::Plain;
  std::optional<int64_t> bos, eos, pad, unk;

  struct TextIds {
    std::vector<int64_t> ids;
    std::vector<std::pair<size_t, std::string>> sources;  // (index in ids, word) of unknown tokens
  };
  TextIds textIds(const std::string& input, size_t budget, bool keep_last) const;
  std::vector<Token> encode(const std::string& text, bool add_special_tokens, const EncodeLimit& limit, bool* cut) const;
  std::vector<tok::Segment> findAddedTokens(const std::string& text) const;
  std::optional<int64_t> idOf(const std::string& piece) const;
  std::string pieceOf(int64_t id) const {
    const auto it = pieces.find(id);
    return it == pieces.end() ? "" : it->second;
  }
  void addToken(const tok::AddedToken& token);
  void finish();
};

namespace {

// tokenizer.json files run to tens of MiB (large vocabularies); /dev/zero does not fit.
constexpr size_t kMaxTokenizerBytes = size_t{512} << 20;

json parseJsonFile(const std::string& path) {
  const std::string text = readSmallFile(path, kMaxTokenizerBytes, "a tokenizer file");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    const std::string why = e.what();
    const size_t colon = why.find("]: ");  // drop nlohmann's "[json.exception.parse_error.101] "
    throw InputError(path + ": not valid JSON (" + (colon == std::string::npos ? why : why.substr(colon + 3)) + ")");
  }
}

// A ByteLevel step in a pre-tokenizer or decoder, or in its Sequence (followed one level of
// structure at a time, never into arbitrary nesting).
bool mentionsByteLevel(const json& node) {
  if (!node.is_object()) return false;
  if (node.contains("type") && node["type"] == "ByteLevel") return true;
  for (const char* list : {"pretokenizers", "decoders"}) {
    if (node.contains(list) && node[list].is_array() && std::any_of(node[list].begin(), node[list].end(), mentionsByteLevel)) {
      return true;
    }
  }
  return false;
}

tok::AddedToken addedTokenOf(const Node& node, int64_t id) {
  tok::AddedToken token;
  token.content = node.string("content");
  token.id = id;
  token.special = node.boolean("special", false);
  token.single_word = node.boolean("single_word", false);
  token.lstrip = node.boolean("lstrip", false);
  token.rstrip = node.boolean("rstrip", false);
  token.normalized = node.boolean("normalized", !token.special);
  return token;
}

}  // namespace

std::optional<int64_t> TokenizerImpl::idOf(const std::string& piece) const {
  const auto known = added_index.find(piece);
  if (known != added_index.end()) return added[known->second].id;
  const auto it = model->vocab().find(piece);
  return it == model->vocab().end() ? std::nullopt : std::optional<int64_t>(it->second);
}

void TokenizerImpl::addToken(const tok::AddedToken& token) {
  if (token.content.empty()) return;
  const auto [it, is_new] = added_index.emplace(token.content, added.size());
  if (is_new) added.push_back(token);
  else added[it->second] = token;
}

// Builds the matchers and the id tables once every added token is known.
void TokenizerImpl::finish() {
  for (const auto& [piece, id] : model->vocab()) {
    size = std::max(size, id + 1);
    pieces[id] = piece;
  }
  for (const auto& token : added) {
    size = std::max(size, token.id + 1);
    pieces[token.id] = token.content;
    if (token.special) special.insert(token.id);
    if (!token.normalized) raw_matcher.add(token.content, token);
    else normalized_matcher.add(normalizer ? normalizer(token.content) : token.content, token);
  }
  raw_matcher.index();
  normalized_matcher.index();
  if (!unk) unk = model->unkId();
}

std::vector<tok::Segment> TokenizerImpl::findAddedTokens(const std::string& text) const {
  std::vector<tok::Segment> segments = raw_matcher.split({text, std::nullopt, true});
  std::vector<tok::Segment> out;
  for (tok::Segment& segment : segments) {
    if (segment.id) {
      out.push_back(std::move(segment));
      continue;
    }
    if (normalizer) segment.text = normalizer(segment.text);
    tok::checkGrowth(text.size(), segment.text.size(), path + ": normalizer");
    for (tok::Segment& piece : normalized_matcher.split(segment)) out.push_back(std::move(piece));
  }
  return out;
}

// The text's ids (no special tokens) within a limit: the first `limit.max_tokens` and one
// more to say that the text goes on (reading no further), or with keep_last all of them.
// An unknown token keeps the pre-tokenized word it came from (its `source`).
TokenizerImpl::TextIds TokenizerImpl::textIds(const std::string& input, size_t budget, bool keep_last) const {
  TextIds out;
  std::vector<int64_t> ids;
  const auto full = [&] { return !keep_last && out.ids.size() > budget; };
  for (const tok::Segment& segment : findAddedTokens(tok::sanitizeUtf8(input))) {
    if (full()) break;
    if (segment.id) {
      out.ids.push_back(*segment.id);
      continue;
    }
    std::vector<tok::Piece> words{{segment.text, segment.at_origin}};
    if (pre_tokenizer) words = pre_tokenizer(std::move(words));
    for (const tok::Piece& word : words) {
      if (full()) break;
      ids.clear();
      model->tokenize(word.text, ids);
      for (const int64_t id : ids) {
        if (unk && id == *unk) out.sources.emplace_back(out.ids.size(), word.text);
        out.ids.push_back(id);
      }
    }
  }
  return out;
}

std::vector<Token> TokenizerImpl::encode(const std::string& input, bool add_special_tokens, const EncodeLimit& limit,
                                         bool* cut) const {
  const bool specials = add_special_tokens && post_processor;
  const size_t added_specials = specials ? post_processor({}).size() : 0;  // BOS, [CLS] ... [SEP]
  const size_t budget = limit.max_tokens > added_specials ? limit.max_tokens - added_specials : 0;
  TextIds text = textIds(input, budget, limit.keep_last);
  const size_t drop = text.ids.size() > budget ? text.ids.size() - budget : 0;
  if (cut) *cut = drop > 0;
  const size_t first = limit.keep_last ? drop : 0;  // the kept ids: [first, first + size - drop)
  std::vector<Token> tokens(text.ids.size() - drop);
  for (size_t i = 0; i < tokens.size(); ++i) {
    Token& token = tokens[i];
    token.id = text.ids[first + i];
    token.special = special.count(token.id) > 0;
    token.unknown = unk && token.id == *unk;
  }
  for (auto& [at, word] : text.sources)
    if (at >= first && at - first < tokens.size()) tokens[at - first].source = std::move(word);
  if (specials) tokens = post_processor(std::move(tokens));
  std::vector<std::string> raw;
  std::vector<bool> is_special;
  for (Token& token : tokens) {
    if (token.piece.empty()) token.piece = pieceOf(token.id);
    raw.push_back(token.piece);
    is_special.push_back(token.special);
  }
  const std::vector<std::string> labels = tok::readableLabels(raw, is_special, style);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i].label = labels[i];
  return tokens;
}

namespace {

// A special token named in tokenizer_config.json / special_tokens_map.json: "<s>" or
// {"content": "<s>", ...}.
std::optional<std::string> specialName(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) return value["content"].get<std::string>();
  return std::nullopt;
}

// The next id for a token that is neither in the vocabulary nor added (added_vocabulary.rs).
int64_t nextId(const TokenizerImpl& impl) {
  int64_t next = static_cast<int64_t>(impl.model->vocab().size());
  for (const auto& token : impl.added) next = std::max(next, token.id + 1);
  return next;
}

void addSpecial(TokenizerImpl& impl, const std::string& content) {
  if (impl.added_index.count(content)) return;
  tok::AddedToken token;
  token.content = content;
  token.id = impl.idOf(content).value_or(nextId(impl));
  token.special = true;
  impl.addToken(token);
}

// tokenizer_config.json: its added_tokens_decoder, the special tokens it and
// special_tokens_map.json name, and (Llama-style) add_bos_token / add_eos_token.
void applyConfigs(TokenizerImpl& impl, const std::string& folder, bool has_post_processor) {
  const std::string config_path = folder + "/tokenizer_config.json";
  const std::string map_path = folder + "/special_tokens_map.json";
  std::error_code ec;
  const json config = fs::exists(config_path, ec) ? parseJsonFile(config_path) : json::object();
  const json map = fs::exists(map_path, ec) ? parseJsonFile(map_path) : json::object();
  const Node config_node{config, config_path, ""};
  if (config.is_object() && config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
    const Node decoder = config_node.at("added_tokens_decoder");
    for (const auto& [id_text, entry] : decoder.value.items()) {
      const int64_t id = std::atoll(id_text.c_str());
      if (id < 0 || id > (int64_t{1} << 31) || std::to_string(id) != id_text) decoder.fail("has a key \"" + id_text + "\" that is not an id");
      if (!impl.idOf(decoder.at(id_text).string("content"))) impl.addToken(addedTokenOf(decoder.at(id_text), id));
    }
  }
  std::optional<int64_t>* roles[] = {&impl.bos, &impl.eos, &impl.pad, &impl.unk};
  const char* role_names[] = {"bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token"};
  for (const json* source : {&map, &config}) {
    if (!source->is_object()) continue;
    for (size_t r = 0; r < std::size(role_names); ++r) {
      const auto name = source->contains(role_names[r]) ? specialName((*source)[role_names[r]]) : std::nullopt;
      if (!name) continue;
      addSpecial(impl, *name);
      if (r < std::size(roles) && !*roles[r]) *roles[r] = impl.idOf(*name);
    }
    if (source->contains("additional_special_tokens") && (*source)["additional_special_tokens"].is_array()) {
      for (const json& extra : (*source)["additional_special_tokens"]) {
        if (const auto name = specialName(extra)) addSpecial(impl, *name);
      }
    }
  }
  // LlamaTokenizerFast and GemmaTokenizerFast rebuild the post-processor from these flags.
  const std::string cls = config_node.string("tokenizer_class", "");
  const bool llama_style = cls.rfind("Llama", 0) == 0 || cls.rfind("CodeLlama", 0) == 0 || cls.rfind("Gemma", 0) == 0;
  const bool flags = config_node.has("add_bos_token") || config_node.has("add_eos_token");
  if (!llama_style && (has_post_processor || !flags)) return;
  std::vector<tok::SpecialPiece> before, after;
  const auto piece = [&](const char* flag, std::optional<int64_t> id, bool fallback, std::vector<tok::SpecialPiece>& into) {
    if (!config_node.boolean(flag, fallback)) return;
    if (!id) config_node.at(flag).fail("is true, but there is no " + std::string(flag).substr(4, 3) + "_token");
    into.push_back({{*id}, {""}});  // the piece comes from the id table
  };
  piece("add_bos_token", impl.bos, llama_style, before);
  piece("add_eos_token", impl.eos, false, after);
  impl.post_processor = tok::makeBosEosProcessor(before, after);
}

std::shared_ptr<TokenizerImpl> loadTokenizerJson(const json& root, const std::string& path) {
  auto impl = std::make_shared<TokenizerImpl>();
  impl->path = path;
  const Node top{root, path, ""};
  top.object();
  impl->model = tok::makeModel(top.at("model"));
  if (top.has("normalizer")) impl->normalizer = tok::makeNormalizer(top.at("normalizer"));
  if (top.has("pre_tokenizer")) impl->pre_tokenizer = tok::makePreTokenizer(top.at("pre_tokenizer"));
  if (top.has("post_processor")) impl->post_processor = tok::makePostProcessor(top.at("post_processor"));
  const bool byte_level = mentionsByteLevel(root.value("pre_tokenizer", json())) || mentionsByteLevel(root.value("decoder", json()));
  impl->style = byte_level ? tok::PieceStyle::ByteLevel : tok::PieceStyle::Plain;
  const Node added = top.at("added_tokens");
  if (!added.value.is_null() && !added.value.is_array()) added.fail("must be a list");
  for (size_t i = 0; added.value.is_array() && i < added.value.size(); ++i) {
    const Node entry = added.at(i);
    const int64_t id = entry.integer("id", -1);
    if (id < 0 || id > (int64_t{1} << 31)) entry.at("id").fail("must be an id in [0, 2^31]");
    impl->addToken(addedTokenOf(entry, id));
  }
  return impl;
}

// GPT-2's original files: vocab.json + merges.txt, with GPT2Tokenizer's defaults.
std::shared_ptr<TokenizerImpl> loadGpt2Files(const std::string& folder) {
  auto impl = std::make_shared<TokenizerImpl>();
  impl->path = folder + "/vocab.json";
  const json vocab = parseJsonFile(impl->path);
  const std::string merges_path = folder + "/merges.txt";
  const std::string merges = readSmallFile(merges_path, kMaxTokenizerBytes, "a tokenizer file");
  impl->model = tok::makeGpt2Model(Node{vocab, impl->path, ""}, merges, merges_path);
  impl->pre_tokenizer = tok::makeGpt2PreTokenizer();
  impl->style = tok::PieceStyle::ByteLevel;
  if (const auto end = impl->idOf("<|endoftext|>")) {
    addSpecial(*impl, "<|endoftext|>");
    impl->bos = impl->eos = impl->unk = end;
  }
  return impl;
}

}  // namespace

HfTokenizer HfTokenizer::load(const std::string& folder) {
  std::error_code ec;
  const std::string json_path = folder + "/tokenizer.json";
  std::shared_ptr<TokenizerImpl> impl;
  bool has_post_processor = false;
  if (fs::exists(json_path, ec)) {
    const json root = parseJsonFile(json_path);
    impl = loadTokenizerJson(root, json_path);
    has_post_processor = root.is_object() && root.contains("post_processor") && !root["post_processor"].is_null();
  } else if (fs::exists(folder + "/vocab.json", ec) && fs::exists(folder + "/merges.txt", ec)) {
    impl = loadGpt2Files(folder);
  } else {
    throw InputError(folder + ": no tokenizer.json, nor GPT-2's vocab.json and merges.txt");
  }
  applyConfigs(*impl, folder, has_post_processor);
  impl->finish();
  return HfTokenizer(std::move(impl));
}

HfTokenizer HfTokenizer::fromJson(const std::string& json_text, const std::string& path) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    const std::string why = e.what();
    const size_t colon = why.find("]: ");
    throw InputError(path + ": not valid JSON (" + (colon == std::string::npos ? why : why.substr(colon + 3)) + ")");
  }
  auto impl = loadTokenizerJson(root, path);
  impl->finish();
  return HfTokenizer(std::move(impl));
}

std::vector<Token> HfTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, EncodeLimit{}, nullptr);
}
std::vector<Token> HfTokenizer::encode(const std::string& text, const EncodeLimit& limit, bool* cut) const {
  return impl_->encode(text, true, limit, cut);
}
int64_t HfTokenizer::vocabSize() const { return impl_->size; }
std::string HfTokenizer::piece(int64_t id) const { return impl_->pieceOf(id); }
std::string HfTokenizer::label(int64_t id) const {
  const std::string raw = impl_->pieceOf(id);
  return raw.empty() || impl_->special.count(id) ? raw : tok::readableLabel(raw, impl_->style);
}
std::vector<std::string> HfTokenizer::labels(const std::vector<int64_t>& ids) const {
  std::vector<std::string> raw;
  std::vector<bool> keep;  // special tokens and ids without piece: as they are
  for (const int64_t id : ids) {
    raw.push_back(impl_->pieceOf(id));
    keep.push_back(raw.back().empty() || impl_->special.count(id) > 0);
  }
  return tok::readableLabels(raw, keep, impl_->style);
}
std::optional<int64_t> HfTokenizer::bosId() const { return impl_->bos; }
std::optional<int64_t> HfTokenizer::eosId() const { return impl_->eos; }
std::optional<int64_t> HfTokenizer::padId() const { return impl_->pad; }
std::optional<int64_t> HfTokenizer::unkId() const { return impl_->unk; }

}  // namespace attnscope
