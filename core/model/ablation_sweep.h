// The ablation sweep (issue 37): each head ablated alone (zero or mean, model/interventions.h),
// and what that does to the plain run's top prediction at one position: the change in its
// log-probability, log p_ablated(top) - log p(top). Each ablated run recomputes only from the
// head's layer on (the runner's kept rows, ModelRunner::setInterventions).
//
// Sizes: N layers, H heads, L positions, V vocabulary.
#pragma once

#include <cstdint>

#include "model/interventions.h"
#include "model/model.h"
#include "tensor/interrupt.h"

namespace attnscope {

struct AblationSweep {
  int64_t position = 0;     // the query position read (0-based)
  int64_t top = 0;          // the plain run's most likely next token there
  double logprob = 0.0;     // its log-probability in the plain run
  Tensor effect;            // [N, H]: log p(top) with head (l, h) ablated, minus logprob
};

// log softmax(logits)[id] in float64 (logits [V]).
double logProbability(const float* logits, int64_t V, int64_t id);

// The sweep on `runner` (left with no interventions; its other settings are changed: it
// unembeds the one position only and keeps no maps, keepMapsWithin(0)). position < 0 counts from the end (-1: the last).
// InputError for a position outside the text or a model without output head. progress:
// the fraction of heads done; returning false stops the sweep (Cancelled).
AblationSweep ablationSweep(ModelRunner& runner, const ModelTokens& tokens, int64_t position, AblationMode mode,
                            const Progress& progress = {});

}  // namespace attnscope
