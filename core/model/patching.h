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

// The sweep on `runner` (left with no interventions, its residuals kept and only the last
// position unembedded). InputError for sequences of unequal length, an id outside the
// vocabulary or a model without output head. progress: the fraction of patched runs done;
// returning false stops the sweep (Cancelled).
PatchTables patchSweep(ModelRunner& runner, const ModelTokens& clean, const ModelTokens& corrupt, int64_t answer,
                       int64_t wrong, const Progress& progress = {});

}  // namespace attnscope
