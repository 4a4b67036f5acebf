// A read-only view of a stack of attention maps, the input of every analysis: one
// probability map per (layer, batch item, head), as the view model holds them (one
// [B, H, L, S] block per layer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/interrupt.h"  // Progress, Cancelled: heavy analyses report and stop through them
#include "tensor/tensor.h"
#include "view/view_model.h"

namespace attnscope {

struct MapStack {
  int64_t layers = 0, B = 0, H = 0, L = 0, S = 0;
  // [layers] pointers, each to [B, H, L, S] row-major probabilities (rows sum to 1 or are
  // 0), borrowed: the owner must outlive the stack.
  std::vector<const float*> probs;
  // [B, L], 1 = every key of that query row is masked (empty = none known). Such rows,
  // and rows whose probabilities sum to 0, are left out of every mean.
  std::vector<uint8_t> fully_masked;
  // Query token labels for the induction score: [B][L], or [1][L] shared by every batch
  // item, or empty when no tokens are known.
  std::vector<std::vector<std::string>> tokens;

  int64_t heads() const { return layers * H; }  // maps per batch item
  // map: [L, S] of (layer, batch item b, head h).
  const float* map(int64_t layer, int64_t b, int64_t h) const { return probs[layer] + (b * H + h) * L * S; }
  // [L] flags of batch item b, or nullptr when none are known.
  const uint8_t* maskedRows(int64_t b) const { return fully_masked.empty() ? nullptr : &fully_masked[b * L]; }
  // Batch item b's tokens, or nullptr when none are known.
  const std::vector<std::string>* tokensOf(int64_t b) const {
    if (tokens.empty()) return nullptr;
    return &tokens[tokens.size() == 1 ? 0 : static_cast<size_t>(b)];
  }
};

// probs: [B, H, L, S] (one layer) or [layers, B, H, L, S]; fully_masked: [B, L] or empty.
// The stack borrows probs: it must outlive it. InputError on other ranks, a fully_masked
// of another shape or tokens of the wrong length.
MapStack mapStackOf(const Tensor& probs, const BoolTensor& fully_masked = {},
                    std::vector<std::vector<std::string>> tokens = {});

// From the view model (borrowed: it must outlive the stack): every layer's probabilities,
// its query tokens, and as fully masked the rows where layer 0 allows no key.
MapStack mapStackOf(const ViewModel& view);

}  // namespace attnscope
