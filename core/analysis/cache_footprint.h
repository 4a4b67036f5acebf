// A model run's KV cache as the runner keeps it (issue 21): per layer the cached positions
// (entries), K/V heads and head size, and the bytes of K and V in float32,
//   bytes = 2 (K, V) * entries * kv_heads * head_dim * 4,
// plus the sum over layers. The KV-cache stepper shows it for model runs at each step (the
// cache after feeding token `step` holds step + 1 entries).
#pragma once

#include <cstdint>
#include <vector>

#include "view/view_model.h"

namespace attnscope {

struct CacheLayer {
  int64_t entries = 0, kv_heads = 0, head_dim = 0;
  uint64_t bytes = 0;
};
struct CacheFootprint {
  std::vector<CacheLayer> layers;  // [n_layers]
  int64_t entries = 0;             // summed over layers
  uint64_t bytes = 0;              // summed over layers
};

// The cache of a model run's view after `entries` positions (clamped to [0, S]); empty for a
// view without traces (imported or tiled maps).
CacheFootprint cacheFootprint(const ViewModel& view, int64_t entries);

}  // namespace attnscope
