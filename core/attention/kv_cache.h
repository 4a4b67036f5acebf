// Decoding with a KV cache: the sequence is fed one token at a time; each step projects
// only the new token, appends its key and value (after RoPE) to the cache, computes the
// new row of the map against the cached keys through the kernel's score pass, then evicts
// what no later query can see (attention sinks + causal window: the cache keeps k + W
// entries, StreamingLLM).
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.h"

namespace attnscope {

struct DecodeStep {
  int64_t position = 0;                // t: the token fed at this step (query row t)
  std::vector<int64_t> cached;         // key positions the row was computed against, ascending
  std::vector<int64_t> evicted;        // every key position evicted up to the end of this step
  Tensor row_probs;                    // [B, H, S]: row t of the map (0 for keys not cached)
  Tensor output;                       // [B, D]: output row t
  int64_t entries_after = 0;           // cache entries kept for the next step (after eviction)
};

struct KvCacheRun {
  int64_t B = 0, L = 0, D = 0, H = 0, G = 0, d = 0;
  int64_t sinks = 0;                   // k: the first k keys are never evicted
  int64_t window = -1;                 // W of the causal window, -1 = none (nothing evicted)
  int64_t capacity = -1;               // entries kept between steps: k + W, or -1 = unbounded
  std::vector<DecodeStep> steps;       // one per token, t = 0..L-1

  // Bytes of K and V (float32) that `entries` cached positions take for one head group of
  // one layer (all B sequences): 2 * B * entries * d * 4; for the layer, times G.
  uint64_t bytesPerGroup(int64_t entries) const {
    return 2ull * static_cast<uint64_t>(B * entries * d) * sizeof(float);
  }
  uint64_t bytesPerLayer(int64_t entries) const { return bytesPerGroup(entries) * static_cast<uint64_t>(G); }
};

// Self-attention decoding (L == S) with the options' variants and mask. The mask must be
// causal (causal, causal-br or causal-window:W, optionally with sinks:K and other terms);
// eviction happens with causal-window:W (or causal + window:W). Throws InputError naming
// the problem otherwise, or for mistakes / dropout, which a decoder does not run. With
// the -1e9 fill a fully masked row is uniform over all S keys as in the full map, but its
// output only averages the cached values (a decoder has no others).
KvCacheRun decodeWithKvCache(const AttentionInputs& inputs, const AttentionOptions& options);

// A decoder's cache policy on a model's runs (issue 21), the stepper's `causal-window:W` with
// `sinks:K`: row t sees the k sinks, itself and the W keys before it, so between steps the
// cache keeps k + W entries per layer. Off (window < 0): every position stays.
struct CacheWindow {
  int64_t window = -1;  // W; -1 = off
  int64_t sinks = 0;    // k (only with a window)
  bool on() const { return window >= 0; }
  bool operator==(const CacheWindow& o) const { return window == o.window && sinks == o.sinks; }
  bool operator!=(const CacheWindow& o) const { return !(*this == o); }
};

// A causal layer's mask under the policy: causal + causal-window:W' + sinks:k, where W' is
// the smaller of W and the layer's own causal window (a model's sliding window still
// applies); the sinks stay visible through it as through any window term. Off: unchanged.
MaskSpec withCacheWindow(MaskSpec layer, const CacheWindow& cache);

// [L]: max over b, h and keys of |step t's row - row t of full.probs|, how far each decoded
// row is from the full computation's (full: the same inputs and options through
// runAttention). Empty when the sizes differ.
std::vector<float> stepRowDifference(const KvCacheRun& run, const AttentionTrace& full);

}  // namespace attnscope
