// The sinusoidal positional encoding of "Attention Is All You Need", shared by the text
// inputs and attnscope-model/1 folders without learned positions.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace attnscope {

// pe: [max_len, d_model]; pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(same),
// as seed 003 (div_term = exp(arange(0, d, 2) * -(log(10000) / d))).
Tensor positionalEncoding(int64_t max_len, int64_t d_model);

}  // namespace attnscope
