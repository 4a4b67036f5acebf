// A model's MLP activations over whole buffers, vectorised with Google Highway (runtime
// dispatch, as attention/softmax_row.h): GELU (tanh form) through hwy's Tanh and SiLU
// through its Exp, each within a few float ulps of the scalar formula; the erf form of GELU
// has no Highway erf and stays scalar (std::erf).
#pragma once

#include <cstdint>

#include "model/model_config.h"

namespace attnscope {

// values[n] = act(values[n]).
void activateAll(Activation kind, float* values, int64_t n);
// up[n] *= act(gate[n]) (a gated MLP: Llama's SwiGLU, Gemma's GeGLU).
void gateAll(Activation kind, const float* gate, float* up, int64_t n);

}  // namespace attnscope
