// The row GEMM's path for a few rows on ggml blocks (a generated token, an appended one):
// y = x W^T with W's blocks dequantized in registers, up to four vectors of rows at a time (one
// lane per output row, each block's bytes gathered across the rows), straight into the FMA chains: no
// float panel is written. Each output is the same one FMA chain over k in order from 0 on the
// same float32 values as the panel path's (ggml_quants.h's dequantization, bit for bit), so a
// row computed here equals the same row computed among many.
#pragma once

#include <cstdint>

#include "tensor/weights.h"

namespace attnscope {

// Rows of x up to which a quantized matrix takes this path.
constexpr int64_t kDecodeRows = 4;

// y [M, N] (rows ldy apart) = x [M, K] (rows ldx apart) W^T, no bias, when W's type has a
// vectorised decoder here (every type ggml_quants.h reads but F32) and M <= kDecodeRows; false (y untouched)
// otherwise. Threads over groups of rows when `threaded`.
bool decodeQuantRows(const float* x, int64_t ldx, int64_t M, const WeightRows& w, float* y, int64_t ldy,
                     bool threaded);

}  // namespace attnscope
