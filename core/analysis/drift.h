// Quantization drift (`attnscope diff`): how far two files of one model (F16 and Q4_K_M, a
// folder and a perturbed copy) move apart on the same ids. Per head, over its [L, S] maps:
//   max_abs = max_{i,j} |P[i,j] - Q[i,j]|
//   js      = mean over query rows i of JS(P_i, Q_i),
//             JS(p, q) = 0.5 KL(p || m) + 0.5 KL(q || m), m = (p + q) / 2, natural log, 0 log 0 = 0
// Per position, the next-token distributions softmax(logits): both top-1 ids and KL(A || B).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

// Accumulates the two [n_layers, H] drift tables from map rows given in any order and blocks.
class AttentionDrift {
 public:
  AttentionDrift(int64_t layers, int64_t heads);
  // a, b: [rows, cols] rows of head `head` of layer `layer` in the two models (probabilities).
  void add(int64_t layer, int64_t head, const float* a, const float* b, int64_t rows, int64_t cols);
  Tensor maxAbs() const;  // [layers, H] float32
  Tensor js() const;      // [layers, H] float32: the JS sums over the rows added, divided by their count
  int64_t layers() const { return layers_; }
  int64_t heads() const { return heads_; }

 private:
  int64_t layers_, heads_;
  std::vector<double> max_abs_, js_sum_;  // [layers * H]
  std::vector<int64_t> rows_;             // [layers * H] rows added
};

// Jensen-Shannon divergence of two distributions over n values (natural log), in float64.
double jensenShannon(const float* p, const float* q, int64_t n);

struct NextTokenDrift {
  int64_t top_a = 0, top_b = 0;  // the most likely id of each (the first on ties)
  double kl = 0.0;               // KL(A || B) of softmax(logits_a) and softmax(logits_b)
};
// One position's logits [V] of each model; float64 log-softmax.
NextTokenDrift nextTokenDrift(const float* logits_a, const float* logits_b, int64_t vocab);

}  // namespace attnscope
