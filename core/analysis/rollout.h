// Attention rollout and attention flow (Abnar and Zuidema, "Quantifying Attention Flow in
// Transformers", ACL 2020): how much each output position draws from each input token
// after every layer. Both use the paper's residual-aware layer matrix
//   A_l = rownorm(0.5 * mean_h probs[l, b, h] + 0.5 * I)       // [L, L]
// so they need self-attention maps (L == S).
#pragma once

#include <cstdint>

#include "analysis/map_stack.h"
#include "tensor/tensor.h"

namespace attnscope {

// [layers, B, L, L]: A_l of every layer (the input of rollout and flow). A fully masked
// (all zero) row becomes the identity row. InputError when L != S.
Tensor residualAttention(const MapStack& maps);

// [layers, B, L, L]: rollout[l] = A_l A_{l-1} ... A_0 (rows sum to 1).
Tensor attentionRollout(const MapStack& maps);

// [layers, B, L, L]: flow[l, b, i, j] = the maximum flow from position i after layer l to
// input token j through the layered graph whose edges (layer k + 1, a) -> (layer k, c)
// have capacity A_k[a, c], each row then divided by its sum (as the paper's code does).
// Costs about layers^2 * L^4 / 2 edge visits per batch item: report progress and allow
// cancel (throws Cancelled).
Tensor attentionFlow(const MapStack& maps, const Progress& progress = {});

// Maximum flow from source to sink in a graph of `nodes` nodes given as a dense capacity
// matrix [nodes, nodes] (capacity[u * nodes + v] for the edge u -> v). Dinic's algorithm
// in double precision; exposed for tests.
double maxFlow(const std::vector<double>& capacity, int64_t nodes, int64_t source, int64_t sink);

}  // namespace attnscope
