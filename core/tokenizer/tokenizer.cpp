// HfTokenizer: loading a folder's tokenizer files and the encode pipeline (tokenizer/mod.rs
// encode_single_sequence): added tokens -> normalizer -> added tokens of normalized form ->
// pre-tokenizer -> model -> post-processor.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>

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
  tok::AddedMatcher raw_matcher, normalized_matcher;
  std::vector<std::string> pieces;  // by id ("" for an unused id)
  std::vector<char> special;        // by id: an added special token
  tok::PieceStyle style = tok::PieceStyle::Plain;
  std::optional<int64_t> bos, eos, pad, unk;

  std::vector<Token> encode(const std::string& text, bool add_special_tokens) const;
  std::vector<tok::Segment> findAddedTokens(const std::string& text) const;
  std::optional<int64_t> idOf(const std::string& piece) const;
  void addToken(const tok::AddedToken& token);
  void finish();
};

namespace {

// tokenizer.json files run to tens of MiB (large vocabularies); /dev/zero does not fit.
constexpr size_t kMaxTokenizerBytes = size_t{512} << 20;
// Normalizers never grow a text much (NFKC at most 18 characters per character).
constexpr size_t kMaxGrowth = 64;

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

bool mentionsByteLevel(const json& node) {
  if (node.is_object()) {
    if (node.contains("type") && node["type"] == "ByteLevel") return true;
    return std::any_of(node.begin(), node.end(), mentionsByteLevel);
  }
  return node.is_array() && std::any_of(node.begin(), node.end(), mentionsByteLevel);
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
  for (const auto& token : added) {
    if (token.content == piece) return token.id;
  }
  const auto it = model->vocab().find(piece);
  return it == model->vocab().end() ? std::nullopt : std::optional<int64_t>(it->second);
}

void TokenizerImpl::addToken(const tok::AddedToken& token) {
  if (token.content.empty()) return;
  const auto same = std::find_if(added.begin(), added.end(), [&](const auto& t) { return t.content == token.content; });
  if (same != added.end()) *same = token;
  else added.push_back(token);
}

// Builds the matchers and the id tables once every added token is known.
void TokenizerImpl::finish() {
  int64_t size = 0;
  for (const auto& [piece, id] : model->vocab()) size = std::max(size, id + 1);
  for (const auto& token : added) size = std::max(size, token.id + 1);
  pieces.assign(static_cast<size_t>(size), "");
  special.assign(static_cast<size_t>(size), 0);
  for (const auto& [piece, id] : model->vocab()) pieces[static_cast<size_t>(id)] = piece;
  for (const auto& token : added) {
    pieces[static_cast<size_t>(token.id)] = token.content;
    special[static_cast<size_t>(token.id)] = token.special;
    if (!token.normalized) raw_matcher.add(token.content, token);
    else normalized_matcher.add(normalizer ? normalizer(token.content) : token.content, token);
  }
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
    if (segment.text.size() > kMaxGrowth * text.size() + 4096) {
      throw InputError(path + ": the normalizer grows the text more than " + std::to_string(kMaxGrowth) + " times");
    }
    for (tok::Segment& piece : normalized_matcher.split(segment)) out.push_back(std::move(piece));
  }
  return out;
}

std::vector<Token> TokenizerImpl::encode(const std::string& input, bool add_special_tokens) const {
  std::vector<Token> tokens;
  const auto push = [&](int64_t id) {
    Token token;
    token.id = id;
    token.special = id < static_cast<int64_t>(special.size()) && special[static_cast<size_t>(id)];
    token.unknown = unk && id == *unk;
    tokens.push_back(token);
  };
  std::vector<int64_t> ids;
  for (const tok::Segment& segment : findAddedTokens(tok::sanitizeUtf8(input))) {
    if (segment.id) {
      push(*segment.id);
      continue;
    }
    std::vector<tok::Piece> words{{segment.text, segment.at_origin}};
    if (pre_tokenizer) words = pre_tokenizer(std::move(words));
    for (const tok::Piece& word : words) {
      ids.clear();
      model->tokenize(word.text, ids);
      for (const int64_t id : ids) push(id);
    }
  }
  if (add_special_tokens && post_processor) tokens = post_processor(std::move(tokens));
  for (Token& token : tokens) {
    if (token.piece.empty() && token.id < static_cast<int64_t>(pieces.size())) token.piece = pieces[static_cast<size_t>(token.id)];
    token.label = token.special ? token.piece : tok::readableLabel(token.piece, style);
  }
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
  for (const auto& token : impl.added) {
    if (token.content == content) return;
  }
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
  return impl_->encode(text, add_special_tokens);
}
int64_t HfTokenizer::vocabSize() const { return static_cast<int64_t>(impl_->pieces.size()); }
std::string HfTokenizer::piece(int64_t id) const {
  return id >= 0 && id < vocabSize() ? impl_->pieces[static_cast<size_t>(id)] : "";
}
std::string HfTokenizer::label(int64_t id) const {
  if (id < 0 || id >= vocabSize()) return "";
  return impl_->special[static_cast<size_t>(id)] ? piece(id) : tok::readableLabel(piece(id), impl_->style);
}
std::optional<int64_t> HfTokenizer::bosId() const { return impl_->bos; }
std::optional<int64_t> HfTokenizer::eosId() const { return impl_->eos; }
std::optional<int64_t> HfTokenizer::padId() const { return impl_->pad; }
std::optional<int64_t> HfTokenizer::unkId() const { return impl_->unk; }

}  // namespace attnscope
