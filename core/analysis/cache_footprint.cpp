#include "analysis/cache_footprint.h"

#include <algorithm>

namespace attnscope {

CacheFootprint cacheFootprint(const ViewModel& view, int64_t entries) {
  CacheFootprint footprint;
  for (const LayerMaps& layer : view.maps) {
    if (!layer.trace) return CacheFootprint{};
    CacheLayer c;
    c.entries = std::clamp<int64_t>(entries, 0, view.S);
    c.kv_heads = layer.trace->G;
    c.head_dim = layer.trace->d;
    c.bytes = 2ull * static_cast<uint64_t>(c.entries * c.kv_heads * c.head_dim) * sizeof(float);
    footprint.layers.push_back(c);
    footprint.entries += c.entries;
    footprint.bytes += c.bytes;
  }
  return footprint;
}

}  // namespace attnscope
