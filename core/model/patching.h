// Activation patching (the clean / corrupted method of Meng et al. 2022 and Wang et al. 2022,
// as TransformerLens' patching.py computes it): two token sequences of equal length, and the
// metric logit(answer) - logit(wrong) at the last position. For every head, the corrupt run
// with that head's z at every position taken from the clean run; for every layer and
// position, the corrupt run with the residual stream entering that layer at that position
// taken from the clean run. Each patched run recomputes from the patched layer (and, in a
// causal model, from the patched position) on: the rest comes from the runner's kept rows.
//
// Sizes: N layers, H heads, L positions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "tensor/interrupt.h"

namespace attnscope {

struct PatchTables {
  double clean = 0.0, corrupt = 0.0;  // the metric of the clean and of the corrupt run
  Tensor heads;                       // [N, H]: the metric with head (l, h)'s z patched
  Tensor resid;                       // [N, L]: the metric with the residual entering layer l at position p patched
};

// logit(answer) - logit(wrong) after the last position of a run (its last row's logits).
double patchMetric(const ModelRun& run, int64_t answer, int64_t wrong);

// The sweep on `runner` (left with no interventions, its residuals kept, no maps kept and
// only the last position unembedded, that row alone). InputError for sequences of unequal length, an id outside the
// vocabulary or a model without output head. progress: the fraction of patched runs done;
// returning false stops the sweep (Cancelled).
PatchTables patchSweep(ModelRunner& runner, const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer,
                       int64_t wrong, const Progress& progress = {});

// (patched - corrupt) / (clean - corrupt) for every cell of a table [rows, cols], row-major;
// every cell nullopt when clean = corrupt (the texts do not tell answer from wrong apart).
std::vector<std::optional<double>> normalisedPatchTable(const Tensor& table, double clean, double corrupt);

// A token typed for the answer or the wrong token: its id when the text is exactly one token
// of the model's vocabulary (no special tokens added), else the pieces it became (printable).
struct TypedToken {
  std::optional<int64_t> id;
  std::vector<std::string> pieces;
};
// InputError when the model has no tokenizer to read text with.
TypedToken typedToken(const Model& model, const std::string& text);
// "it is 2 tokens of NAME's vocabulary ('a', 'b'), not one" for a text that is not one token.
std::string notOneToken(const Model& model, const TypedToken& typed);

}  // namespace attnscope
