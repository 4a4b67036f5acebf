// The logit lens: what each layer would predict. For layer l (0 = the embeddings, k = the
// residual stream after k layers) and position t, the model's own output head (final norm,
// unembedding, the family's final soft-capping; BERT: the masked-LM head) is applied to the
// residual, then softmax and the top k. The last layer's rows are the model's own output
// distribution: the same head on the same residual.
//
// Sizes: N layers, L positions, D d_model, V vocabulary, k guesses kept.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/model.h"

namespace attnscope {

inline constexpr int64_t kLensTop = 5;

struct LogitLens {
  int64_t layers = 0, positions = 0, k = 0;  // N + 1, L, k
  std::vector<int64_t> ids;  // [N + 1, L, k] token ids, most likely first (ties: the smaller id)
  std::vector<float> probs;  // [N + 1, L, k] their probabilities
  bool empty() const { return ids.empty(); }
  int64_t at(int64_t layer, int64_t position, int64_t rank) const { return (layer * positions + position) * k + rank; }
};

// The output head: logits [L, V] of residuals x [L, D]; empty logits = no head.
using OutputHead = std::function<void(const Tensor& x, Tensor& logits)>;

// The lens of residuals [N + 1, L, D] through `head`; empty when the head gives no logits.
LogitLens logitLens(const Tensor& residuals, const OutputHead& head, int64_t k = kLensTop);

// The lens of a run made with keepResiduals(true) (empty residuals: an empty lens).
LogitLens modelLens(const Model& model, const ModelRun& run, int64_t k = kLensTop);

// One forward over a token sequence (a prompt, or a generation's final sequence) with the
// residuals kept, and its lens. The runner's last run is this one afterwards.
LogitLens lensOfTokens(ModelRunner& runner, ModelTokens tokens, int64_t k = kLensTop);

}  // namespace attnscope
