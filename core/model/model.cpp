// The model contract's entry points that do not depend on the folder kind: loading either
// kind, and a model's tokens (its tokenizer, or attnscope-model/1's characters or bytes).
#include "model/model.h"

#include <algorithm>
#include <filesystem>

#include "model/gguf_model.h"
#include "model/local_models.h"
#include "tokenizer/tokenizer.h"

namespace attnscope {

std::string Model::name() const {
  if (!display_name.empty()) return display_name;
  const std::string hub = hubName(folder);  // a cached snapshot's folder is a rev hash
  return hub.empty() ? std::filesystem::path(folder).filename().string() : hub.substr(3);
}

Model loadModel(const std::string& model, bool with_tokenizer, const Progress& progress) {
  const std::string folder = resolveModelName(model);  // hf:ORG/NAME, ollama:NAME[:TAG]
  const bool ollama = model.rfind("ollama:", 0) == 0;  // named NAME:TAG, not by its blob's hash
  if (isGgufFile(folder)) return loadGgufModel(folder, with_tokenizer, ollama ? model.substr(7) : "");
  return isHfModelFolder(folder) ? loadHfFolder(folder, with_tokenizer, progress) : loadOwnFolder(folder);
}

void checkModelFolder(const std::string& model) {
  const std::string folder = resolveModelName(model);
  if (isGgufFile(folder)) checkGgufModel(folder);
  else if (isHfModelFolder(folder)) checkHfFolder(folder);
  else loadOwnFolder(folder);
}

// "#id" without a tokenizer, and for ids past its vocabulary: Pythia's and Qwen's embeddings
// are padded past their tokenizers' (50304 rows for 50277 tokens), and a layer's top guess
// can be one of those rows.
std::string tokenLabel(const Model& model, int64_t id) {
  if (model.chars) return model.chars->label(id);
  if (model.tokenizer && !model.tokenizer->piece(id).empty()) return escapeToken(model.tokenizer->label(id));
  return "#" + std::to_string(id);
}

std::vector<std::string> tokenLabels(const Model& model, const std::vector<int64_t>& ids) {
  if (!model.tokenizer) {
    std::vector<std::string> labels;
    for (const int64_t id : ids) labels.push_back(tokenLabel(model, id));
    return labels;
  }
  std::vector<std::string> labels = model.tokenizer->labels(ids);
  for (size_t t = 0; t < ids.size(); ++t)
    labels[t] = labels[t].empty() ? "#" + std::to_string(ids[t]) : escapeToken(labels[t]);
  return labels;
}

std::string tokenText(const Model& model, int64_t id) {
  if (model.chars) return model.chars->entry(id);
  if (!model.tokenizer) return "#" + std::to_string(id);
  std::string text = model.tokenizer->label(id);
  for (auto [mark, plain] : {std::pair{kSpaceMark, " "}, {kNewlineMark, "\n"}, {kTabMark, "\t"}})
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1))
      text.replace(at, std::string(mark).size(), plain);
  return text;
}

const char* tokenUnit(const Model& model) { return model.chars ? model.chars->unit() : "tokens"; }

namespace {

ModelTokens fromTokenizer(std::vector<Token> tokens) {
  ModelTokens t;
  for (Token& token : tokens) {
    t.ids.push_back(token.id);
    t.text.push_back(std::move(token.piece));
    t.label.push_back(escapeToken(token.label));
    t.unknown.push_back(token.unknown ? 1 : 0);
    t.source.push_back(std::move(token.source));
  }
  return t;
}

// attnscope-model/1's tokens are the text's characters (or bytes): its first n + 1, or its
// last n, are all a limit of n needs.
std::string unitsWithin(const Model& model, const std::string& text, size_t n, bool last) {
  const bool bytes = std::string(model.chars->unit()) == "bytes";
  const auto starts_unit = [&](size_t at) { return bytes || (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80; };
  size_t seen = 0;
  if (last) {
    for (size_t at = text.size(); at-- > 0;)
      if (starts_unit(at) && ++seen == n) return text.substr(at);
    return text;
  }
  for (size_t at = 0; at < text.size(); ++at)
    if (starts_unit(at) && seen++ == n + 1) return text.substr(0, at);
  return text;
}

// At most max_tokens of the text's tokens, its first or its last; *cut: some were dropped.
ModelTokens tokensWithin(const Model& model, const std::string& text, int64_t max_tokens, bool last, bool* cut) {
  const auto n = static_cast<size_t>(std::max<int64_t>(max_tokens, 0));
  if (!model.chars) {
    if (!model.tokenizer) return tokenizeForModel(model, text);  // refused there
    return fromTokenizer(model.tokenizer->encode(text, EncodeLimit{n, last}, cut));
  }
  const std::string kept = unitsWithin(model, text, n, last);
  ModelTokens t = model.chars->encode(kept);
  *cut = last ? kept.size() < text.size() : t.ids.size() > n;
  const size_t drop = t.ids.size() > n ? t.ids.size() - n : 0;  // (an invalid byte is a token of its own)
  const auto trim = [&](auto& column) { column.erase(last ? column.begin() : column.end() - drop,
                                                     last ? column.begin() + drop : column.end()); };
  trim(t.ids), trim(t.text), trim(t.label), trim(t.unknown);
  return t;
}

}  // namespace

ModelTokens tokenizeForModel(const Model& model, const std::string& text) {
  if (model.chars) return model.chars->encode(text);
  if (!model.tokenizer) throw InputError(model.folder + ": no tokenizer.json (or vocab.json + merges.txt) to encode the text with");
  return fromTokenizer(model.tokenizer->encode(text));
}

TextTokens textTokens(const Model& model, const std::string& text, Truncate truncate, int64_t count_to, int64_t room) {
  const int64_t context = model.context();
  TextTokens out;
  const bool refuse = truncate == Truncate::None;
  const int64_t keep = refuse ? std::max(count_to, context) : std::max<int64_t>(context - room, 1);
  out.tokens = tokensWithin(model, text, keep, truncate == Truncate::Start, &out.more);
  out.count = static_cast<int64_t>(out.tokens.ids.size());
  out.refused = refuse && (out.more || out.count > context);
  if (out.refused) out.tokens = ModelTokens();
  return out;
}

ModelTokens tokensForRun(const Model& model, const std::string& text, Truncate truncate, int64_t room) {
  TextTokens t = textTokens(model, text, truncate, 0, room);
  if (t.refused) throw InputError(contextError(model, t.count, t.more));
  return std::move(t.tokens);
}

std::string contextError(const Model& model, int64_t count, bool more) {
  const ModelConfig& c = model.config;
  return "the text has " + std::string(more ? "more than " : "") + std::to_string(count) + " " + tokenUnit(model) +
         " but " + model.name() + "'s context is " + std::to_string(c.max_positions) + " (" + c.context_key + " in " +
         c.config_path + ")";
}

void checkTokenId(const Model& model, int64_t id) {
  const ModelConfig& c = model.config;
  if (id < 0 || id >= c.vocab)
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                     std::to_string(c.vocab) + " in " + c.config_path + ")");
}

ModelTokens tokensFromIds(const Model& model, const std::vector<int64_t>& ids) {
  ModelTokens t;
  for (int64_t id : ids) {
    checkTokenId(model, id);
    t.ids.push_back(id);
    t.text.push_back(model.chars ? model.chars->entry(id) : model.tokenizer ? model.tokenizer->piece(id) : std::to_string(id));
    t.unknown.push_back(model.tokenizer && model.tokenizer->unkId() == id ? 1 : 0);
  }
  t.label = tokenLabels(model, ids);
  return t;
}

std::vector<Prediction> topPredictions(const Model& model, const float* logits, int64_t V, int64_t k) {
  const std::vector<double> p = nextTokenProbs(logits, V);
  std::vector<Prediction> out;
  for (int64_t id : topIds(p, k)) out.push_back({id, tokenLabel(model, id), p[id]});
  return out;
}

}  // namespace attnscope
