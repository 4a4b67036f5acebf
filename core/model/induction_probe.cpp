#include "model/induction_probe.h"

#include <algorithm>
#include <random>

namespace attnscope {
namespace {

// The probe's first token and the text that types it.
struct ProbeStart {
  std::string text;
  std::vector<int64_t> ids;
};

std::vector<int64_t> idsOf(const Model& model, const std::string& text) { return tokenizeForModel(model, text).ids; }

ProbeStart probeStart(const Model& model) {
  if (std::vector<int64_t> ids = idsOf(model, ""); ids.size() == 1) return {"", ids};  // the tokenizer adds BOS
  std::vector<std::string> candidates;
  if (model.tokenizer && model.tokenizer->bosId()) candidates.push_back(model.tokenizer->piece(*model.tokenizer->bosId()));
  candidates.push_back("\n");
  for (const std::string& text : candidates)
    if (std::vector<int64_t> ids = idsOf(model, text); ids.size() == 1) return {text, ids};
  throw InputError("repeated random tokens: " + model.name() + " has no BOS token and no newline token to start with");
}

// Ids a probe never draws: the tokenizer's special tokens and the unknown id.
bool special(const Model& model, int64_t id) {
  if (model.chars) return id == model.chars->unkId();
  const HfTokenizer& t = *model.tokenizer;
  for (const std::optional<int64_t>& s : {t.bosId(), t.eosId(), t.padId(), t.unkId()})
    if (s && *s == id) return true;
  return false;
}

}  // namespace

InductionProbe repeatedRandomTokens(const Model& model, int64_t n, uint64_t seed) {
  const int64_t context = model.config.max_positions;
  if (n < 1) throw InputError("repeated random tokens: N must be at least 1 (got " + std::to_string(n) + ")");
  if (context > 0 && 2 * n + 1 > context)
    throw InputError("repeated random tokens: 2N + 1 = " + std::to_string(2 * n + 1) + " tokens pass " + model.name() +
                     "'s context of " + std::to_string(context));
  if (!model.chars && !model.tokenizer) throw InputError(model.folder + ": no tokenizer to type random tokens with");
  const ProbeStart start = probeStart(model);
  std::mt19937_64 rng(seed);
  // The tokenizer's vocabulary where it is smaller than the embedding's (ids past it have no text).
  const int64_t V = model.tokenizer ? std::min(model.config.vocab, model.tokenizer->vocabSize()) : model.config.vocab;
  std::uniform_int_distribution<int64_t> draw(0, V - 1);
  std::vector<int64_t> picked;
  std::string first, second;  // the two copies' texts so far
  for (int64_t tries = 0; static_cast<int64_t>(picked.size()) < n; ++tries) {
    if (tries > 50 * n + 1000)
      throw InputError("repeated random tokens: too few tokens of " + model.name() + " keep apart when typed");
    const int64_t id = draw(rng);
    if (special(model, id) || id == start.ids[0]) continue;
    const std::string piece = tokenText(model, id);
    if (piece.empty()) continue;
    std::vector<int64_t> want = start.ids;
    for (int copy = 0; copy < 2; ++copy) {
      want.insert(want.end(), picked.begin(), picked.end());
      want.push_back(id);
    }
    // At the text's start, a tokenizer that prepends its space marker (Llama 2's "▁") types
    // the token " x" from "x".
    std::vector<std::string> heads{piece};
    if (picked.empty() && piece.size() > 1 && piece[0] == ' ') heads.push_back(piece.substr(1));
    for (const std::string& head : heads) {
      if (idsOf(model, start.text + first + head + second + piece) != want) continue;  // merges: draw again
      picked.push_back(id);
      first += head;
      second += piece;
      break;
    }
  }
  InductionProbe probe{start.text + first + second, start.ids, n};
  for (int copy = 0; copy < 2; ++copy) probe.ids.insert(probe.ids.end(), picked.begin(), picked.end());
  return probe;
}

}  // namespace attnscope
