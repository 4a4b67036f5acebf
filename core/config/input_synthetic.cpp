// Synthetic source: seeded random inputs of any size (large maps, benchmarks).
#include "config/inputs.h"

#include <algorithm>

#include "attention/tiles.h"
#include "view/view_model.h"
#include "tensor/memory.h"

#include "config/text_input.h"

namespace attnscope {
namespace {

Tensor gaussian(const Shape& shape, uint64_t seed) {
  // tokenEmbedding is a seeded N(0, 1) stream; reuse it with a fixed label per tensor.
  Tensor t(shape);
  const std::vector<float> values = tokenEmbedding("", numel(shape), seed);
  t.data.assign(values.begin(), values.end());
  return t;
}

}  // namespace

AttentionInputs syntheticInputs(const Settings& s) {
  if (s.batch < 1 || s.synthetic_L < 1 || s.synthetic_S < 1) {
    throw InputError("synthetic sizes must be >= 1, got B=" + std::to_string(s.batch) +
                     " L=" + std::to_string(s.synthetic_L) + " S=" + std::to_string(s.synthetic_S));
  }
  const int64_t B = s.batch, L = s.synthetic_L, S = s.synthetic_S, D = s.modelDim();
  // Sizes whose full trace does not fit are shown in tiles (Run::tiled); refused only when
  // even the tiles do not fit.
  checkMemory(std::min(estimateTraceBytes(B, L, S, D, D, D, D, s.heads),
                       estimateTiledBytes(B, L, S, D, D, D, D, s.heads, std::min(L, kTextureMaxSide),
                                          std::min(S, kTextureMaxSide))));
  AttentionInputs in;
  in.query = gaussian({B, L, D}, s.seed ^ 0x51ull);
  // Self-attention when the lengths match and cross-attention is off; otherwise one
  // seeded memory sequence [B, S, D] serves as key and value (d2l's attention(X, Y, Y)).
  if (!s.cross_attention && L == S) {
    in.key = in.value = in.query;
  } else {
    in.key = gaussian({B, S, D}, s.seed ^ 0x4Bull);
    in.value = in.key;
  }
  if (!s.valid_lens.empty()) in.valid_lens = resolveValidLens(s.valid_lens, std::vector<int64_t>(B, S), S);
  for (int64_t i = 0; i < L; ++i) in.query_tokens.push_back(std::to_string(i));
  for (int64_t j = 0; j < S; ++j) in.key_tokens.push_back(std::to_string(j));
  seedDefaultWeights(in, D, D, D, D, s.bias, s.seed);
  return in;
}

}  // namespace attnscope
