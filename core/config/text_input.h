// Inputs made from text: tokens, seeded embeddings and PyTorch-default seeded weights (the
// sinusoidal positions: attention/positional_encoding.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.h"

namespace attnscope {

// Whitespace split; each CJK character (and CJK punctuation) is its own token.
std::vector<std::string> tokenize(const std::string& utf8_text);

// One embedding row [D] per distinct token, seeded by (seed, token text): the same token
// gets the same vector wherever it appears. Values ~ N(0, 1).
std::vector<float> tokenEmbedding(const std::string& token, int64_t d_model, uint64_t seed);

// Weights as PyTorch initialises nn.MultiheadAttention: xavier-uniform in-projections
// (bound sqrt(6 / (fan_in + fan_out))), out-projection uniform(+-1/sqrt(D)), zero biases
// (or no biases when bias == false, as seed 002's LLaMA-style block).
void seedDefaultWeights(AttentionInputs& inputs, int64_t D, int64_t Dq, int64_t Dk, int64_t Dv,
                        bool bias, uint64_t seed);

// Grouped-query attention from multi-head weights, as the GQA paper converts checkpoints:
// w_k/w_v [H*d, Din] -> [G*d, Din] (and b_k/b_v), each K/V head the mean of its group's
// H/G heads. Throws InputError when G does not divide H (or w_k is not [H*d, Din]).
void poolKeyValueHeads(AttentionInputs& inputs, int64_t heads, int64_t kv_heads);

}  // namespace attnscope
