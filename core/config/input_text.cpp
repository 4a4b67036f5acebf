// Text source: one batch item per non-empty line, tokens embedded with seeded vectors
// (+ sinusoidal positions), shorter lines padded with "<pad>" and masked by valid lengths.
#include "config/inputs.h"

#include <algorithm>
#include <sstream>

#include "attention/positional_encoding.h"
#include "config/text_input.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

std::vector<std::string> nonEmptyLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!tokenize(line).empty()) lines.push_back(line);
  }
  return lines;
}

// Tokens of every non-empty line, padded with "<pad>" to the longest; lengths returned.
std::vector<std::vector<std::string>> tokenizeLines(const std::string& text, std::vector<int64_t>& lengths) {
  std::vector<std::vector<std::string>> rows;
  size_t longest = 0;
  for (const std::string& line : nonEmptyLines(text)) {
    rows.push_back(tokenize(line));
    longest = std::max(longest, rows.back().size());
  }
  lengths.clear();
  for (auto& row : rows) {
    lengths.push_back(static_cast<int64_t>(row.size()));
    row.resize(longest, "<pad>");
  }
  return rows;
}

// [B, T, D]: embedding of each token (+ sinusoidal position when enabled).
Tensor embedTokens(const std::vector<std::vector<std::string>>& rows, int64_t D, bool positional, uint64_t seed) {
  const int64_t B = static_cast<int64_t>(rows.size()), T = static_cast<int64_t>(rows[0].size());
  Tensor x({B, T, D});
  const Tensor pe = positional ? positionalEncoding(T, D) : Tensor();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<float> e = tokenEmbedding(rows[b][t], D, seed);
      float* out = &x.data[(b * T + t) * D];
      for (int64_t c = 0; c < D; ++c) out[c] = e[c] + (positional ? pe.data[t * D + c] : 0.0f);
    }
  return x;
}

// The key rows of every batch item (cross-attention: one key line may serve every query
// line) and their unpadded lengths.
std::vector<std::vector<std::string>> keyRows(const Settings& s, const std::vector<std::vector<std::string>>& query_rows,
                                              const std::vector<int64_t>& query_lens, std::vector<int64_t>& key_lens) {
  key_lens = query_lens;
  if (!s.cross_attention) return query_rows;
  const size_t B = query_rows.size();
  std::vector<std::vector<std::string>> key_rows = tokenizeLines(s.key_text, key_lens);
  if (key_rows.empty()) throw InputError("key text: no tokens (type at least one word)");
  if (key_rows.size() == 1 && B > 1) {  // one key sequence serves every query line
    key_rows.assign(B, key_rows[0]);
    key_lens.assign(B, key_lens[0]);
  }
  if (key_rows.size() != B) {
    throw InputError("key text has " + std::to_string(key_rows.size()) + " lines but the text has " +
                     std::to_string(B) + " (use one key line or one per text line)");
  }
  return key_rows;
}

}  // namespace

std::vector<int64_t> textKeyLengths(const Settings& s) {
  std::vector<int64_t> query_lens, key_lens;
  const std::vector<std::vector<std::string>> query_rows = tokenizeLines(s.text, query_lens);
  if (query_rows.empty()) return {};
  try {
    keyRows(s, query_rows, query_lens, key_lens);
  } catch (const InputError&) {
    return {};
  }
  return key_lens;
}

AttentionInputs textInputs(const Settings& s) {
  const int64_t H = s.heads, D = s.modelDim();
  std::vector<int64_t> query_lens, key_lens;
  const std::vector<std::vector<std::string>> query_rows = tokenizeLines(s.text, query_lens);
  if (query_rows.empty()) throw InputError("text: no tokens (type at least one word)");
  const int64_t B = static_cast<int64_t>(query_rows.size()), L = static_cast<int64_t>(query_rows[0].size());
  const std::vector<std::vector<std::string>> key_rows = keyRows(s, query_rows, query_lens, key_lens);
  const int64_t S = static_cast<int64_t>(key_rows[0].size());
  checkMemory(estimateTraceBytes(B, L, S, D, D, D, D, H));

  AttentionInputs in;
  in.query = embedTokens(query_rows, D, s.positional_encoding, s.seed);
  in.key = s.cross_attention ? embedTokens(key_rows, D, s.positional_encoding, s.seed) : in.query;
  in.value = in.key;
  const bool ragged = std::any_of(key_lens.begin(), key_lens.end(), [S](int64_t n) { return n != S; });
  // Padding masks each item's "<pad>" keys unless its length was set by hand.
  if (!s.valid_lens.empty()) in.valid_lens = resolveValidLens(s.valid_lens, key_lens, S);
  else if (ragged || s.mask.padding) in.valid_lens = key_lens;
  in.query_tokens = query_rows[0];
  in.key_tokens = key_rows[0];
  if (B > 1) {
    in.batch_query_tokens = query_rows;
    in.batch_key_tokens = key_rows;
  }
  seedDefaultWeights(in, D, D, D, D, s.bias, s.seed);
  return in;
}

}  // namespace attnscope
