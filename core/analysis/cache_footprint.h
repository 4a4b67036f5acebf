// A model run's KV cache as a decoder keeps it (issue 21): per layer the cached positions
// (entries), the positions evicted, K/V heads and head size, and the bytes of K and V in
// float32,
//   bytes = 2 (K, V) * entries * kv_heads * head_dim * 4,
// plus the sums over layers. While step t computes its row, the cache holds exactly the keys
// row t may attend in that layer's mask: positions 0..t under a plain causal mask; under
// sinks:k + causal-window:W (attention/kv_cache.h, CacheWindow; a model's own sliding
// window likewise) the sinks, the W keys before t and t itself, k + W + 1 entries once the
// window is full (k + W kept between steps, as the stepper's decoding keeps them); the
// other fed positions were evicted. The KV-cache stepper shows it for model runs.
#pragma once

#include <cstdint>
#include <vector>

#include "view/view_model.h"

namespace attnscope {

struct CacheLayer {
  int64_t entries = 0, evicted = 0, kv_heads = 0, head_dim = 0;
  uint64_t bytes = 0;
};
struct CacheFootprint {
  std::vector<CacheLayer> layers;  // [n_layers]
  int64_t entries = 0;             // summed over layers
  int64_t evicted = 0;             // summed over layers
  uint64_t bytes = 0;              // summed over layers
};

// The cache of a model run's view while step `step` (clamped to [0, L - 1]) computes its row,
// from each layer's mask (batch item 0); empty for a view without traces (imported or tiled
// maps) or without positions.
CacheFootprint cacheFootprint(const ViewModel& view, int64_t step);

}  // namespace attnscope
