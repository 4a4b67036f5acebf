// The score pass of one query row: scale, mask and softmax fused into one sweep over the
// row, vectorised with Google Highway (runtime dispatch picks AVX-512, AVX2 or SSE4 on the
// machine it runs on). Every path that turns q.k into probabilities goes through here:
// the full trace, the tiled overview and the exact tiles.
#pragma once

#include <cstdint>

namespace attnscope {

struct RowSoftmax {
  int64_t allowed = 0;  // keys the mask allows in this row; 0 = probs left unwritten
  float max = 0.0f;     // largest allowed scaled score
  float sum = 0.0f;     // sum of exp(score - max) over the allowed keys
};

// raw: [n] q.k; allowed: [n] 1 = may attend. Writes scores[j] = scale * raw[j] where
// allowed and `fill` where masked, and probs[j] = softmax over the allowed keys, exactly 0
// at masked keys (never trusting exp(-inf) to underflow). raw and scores may alias.
RowSoftmax scaleMaskSoftmaxRow(const float* raw, const uint8_t* allowed, int64_t n, float scale,
                               float fill, float* scores, float* probs);

// out[j] = exp(x[j] - shift) in double (within 1 ulp of std::exp) for j < n; returns their
// sum. A model's next-token softmax over its vocabulary (model_run.h's nextTokenProbs):
// vectorised, it is a tenth of the scalar std::exp's time, which was most of a long text's
// predictions.
double expShiftedInto(const float* x, int64_t n, double shift, double* out);

}  // namespace attnscope
