// Placeholder while the implementation lands (branch tok): loading refuses every folder.
#include "tokenizer/tokenizer.h"

namespace attnscope {

struct TokenizerImpl {};

HfTokenizer HfTokenizer::load(const std::string& folder) {
  throw InputError(folder + "/tokenizer.json: tokenizers are not implemented yet");
}
HfTokenizer HfTokenizer::fromJson(const std::string&, const std::string& path) {
  throw InputError(path + ": tokenizers are not implemented yet");
}
std::vector<Token> HfTokenizer::encode(const std::string&, bool) const { return {}; }
int64_t HfTokenizer::vocabSize() const { return 0; }
std::string HfTokenizer::piece(int64_t) const { return ""; }
std::string HfTokenizer::label(int64_t) const { return ""; }
std::optional<int64_t> HfTokenizer::bosId() const { return std::nullopt; }
std::optional<int64_t> HfTokenizer::eosId() const { return std::nullopt; }
std::optional<int64_t> HfTokenizer::padId() const { return std::nullopt; }
std::optional<int64_t> HfTokenizer::unkId() const { return std::nullopt; }

}  // namespace attnscope
