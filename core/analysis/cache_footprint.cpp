#include "analysis/cache_footprint.h"

#include <algorithm>

namespace attnscope {

CacheFootprint cacheFootprint(const ViewModel& view, int64_t step) {
  CacheFootprint footprint;
  if (view.L <= 0) return footprint;
  const int64_t t = std::clamp<int64_t>(step, 0, view.L - 1);
  for (const LayerMaps& layer : view.maps) {
    if (!layer.trace) return CacheFootprint{};
    CacheLayer c;
    // Row t's allowed keys: a decoder holds exactly these (a key out of row t's window is out
    // of every later row's, so it was evicted); no mask: every fed key.
    const uint8_t* allowed = layer.allowed ? layer.allowed.get() + t * view.S : nullptr;
    c.entries = allowed ? std::count(allowed, allowed + std::min(t + 1, view.S), uint8_t{1}) : t + 1;
    c.evicted = t + 1 - c.entries;
    c.kv_heads = layer.trace->G;
    c.head_dim = layer.trace->d;
    c.bytes = 2ull * static_cast<uint64_t>(c.entries * c.kv_heads * c.head_dim) * sizeof(float);
    footprint.layers.push_back(c);
    footprint.entries += c.entries;
    footprint.evicted += c.evicted;
    footprint.bytes += c.bytes;
  }
  return footprint;
}

}  // namespace attnscope
