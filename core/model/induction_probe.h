// The induction probe of TransformerLens (and of the induction-head literature): BOS, then N
// seeded random tokens, then the same N tokens again, as a text the app's text box takes.
// An induction head attends from each token of the second copy to the token after its first
// occurrence: query i to key i - N + 1, the stripe diagonal(offset = 1 - N) of the map
// (analysis/head_metrics.h: inductionStripeScore).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace attnscope {

struct InductionProbe {
  std::string text;           // what the text box gets: it tokenizes back to exactly `ids`
  std::vector<int64_t> ids;   // [2N + 1]: the first token, r_1..r_N, r_1..r_N
  int64_t n = 0;              // N
};

// BOS is the token the tokenizer puts first by itself, else the model's BOS token typed as
// text, else a newline (a character model without one). Random tokens are drawn uniformly
// from the vocabulary (the tokenizer's where it is smaller than the embedding's; no special
// tokens, no unknown id) by a std::mt19937_64 seeded with
// `seed`; a token whose text would merge with its neighbours (tokenize back to other ids)
// is drawn again. InputError when N < 1, 2N + 1 passes the context, or no such tokens exist.
InductionProbe repeatedRandomTokens(const Model& model, int64_t n, uint64_t seed);

}  // namespace attnscope
