// The model contract's entry points that do not depend on the folder kind: loading either
// kind, and a model's tokens (its tokenizer, or attnscope-model/1's characters or bytes).
#include "model/model.h"

#include <filesystem>

#include "tokenizer/tokenizer.h"

namespace attnscope {

std::string Model::name() const {
  return display_name.empty() ? std::filesystem::path(folder).filename().string() : display_name;
}

Model loadModel(const std::string& folder, bool with_tokenizer, const Progress& progress) {
  return isHfModelFolder(folder) ? loadHfFolder(folder, with_tokenizer, progress) : loadOwnFolder(folder);
}

void checkModelFolder(const std::string& folder) {
  if (isHfModelFolder(folder)) checkHfFolder(folder);
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

ModelTokens tokenizeForModel(const Model& model, const std::string& text) {
  if (model.chars) return model.chars->encode(text);
  if (!model.tokenizer) throw InputError(model.folder + ": no tokenizer.json (or vocab.json + merges.txt) to encode the text with");
  ModelTokens t;
  for (const Token& token : model.tokenizer->encode(text)) {
    t.ids.push_back(token.id);
    t.text.push_back(token.piece);
    t.label.push_back(escapeToken(token.label));
    t.unknown.push_back(token.unknown ? 1 : 0);
  }
  return t;
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
    t.label.push_back(tokenLabel(model, id));
    t.unknown.push_back(model.tokenizer && model.tokenizer->unkId() == id ? 1 : 0);
  }
  return t;
}

std::vector<Prediction> topPredictions(const Model& model, const float* logits, int64_t V, int64_t k) {
  const std::vector<double> p = nextTokenProbs(logits, V);
  std::vector<Prediction> out;
  for (int64_t id : topIds(p, k)) out.push_back({id, tokenLabel(model, id), p[id]});
  return out;
}

}  // namespace attnscope
