#include "attention/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "attention/kernel.h"
#include "attention/mistakes.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

// One cached position: its key and value for every batch item and K/V head,
// [B, G*d] each (RoPE already applied to the key).
struct CacheEntry {
  int64_t position;
  std::vector<float> k, v;
};

// The causal window W a decoder can evict by: causal-window:W, or causal + window:W.
int64_t causalWindow(const MaskSpec& m) {
  if (m.causal_window >= 0) return m.causal_window;
  if ((m.causal || m.causal_bottom_right) && m.window >= 0) return m.window;
  return -1;
}

// Throws InputError unless the run is one a decoder can step through: self-attention,
// a causal mask, no mistake, no dropout.
void checkDecodable(const AttentionInputs& in, const RunSizes& n, const AttentionOptions& options) {
  if (n.S != n.L) {
    throw InputError("the KV-cache stepper decodes self-attention: key length S=" + std::to_string(n.S) +
                     " must equal the query length L=" + std::to_string(n.L));
  }
  const MaskSpec& m = options.mask;
  if (!m.causal && !m.causal_bottom_right && m.causal_window < 0) {
    throw InputError("the KV-cache stepper decodes causally: the mask needs causal or causal-window:W, got '" +
                     m.toString() + "'");
  }
  if (options.mistake != Mistake::None) {
    throw InputError(std::string("the KV-cache stepper runs correct attention; mistake '") +
                     mistakeName(options.mistake) + "' is on");
  }
  if (options.train && options.dropout > 0.0f) {
    throw InputError("the KV-cache stepper decodes in eval mode; turn dropout off");
  }
  if (in.w_o.dim(0) != n.D) {
    throw InputError("the KV-cache stepper needs a square output projection w_o [D, D], got " +
                     shapeToString(in.w_o.shape));
  }
}

// The run's sizes and cache policy, with no steps yet.
KvCacheRun emptyRun(const RunSizes& n, const MaskSpec& m) {
  KvCacheRun run;
  run.B = n.B, run.L = n.L, run.D = n.D, run.H = n.H, run.G = n.G, run.d = n.d;
  run.sinks = std::max<int64_t>(m.sinks, 0);
  run.window = causalWindow(m);
  // Query t + 1 sees keys t + 1 - W .. t + 1, so after step t the cache keeps the W most
  // recent keys plus the k sinks.
  if (run.window >= 0) run.capacity = run.sinks + run.window;
  return run;
}

// One decode: the inputs, the plan and mask, and the per-row scratch buffers.
class StepDecoder {
 public:
  StepDecoder(const AttentionInputs& in, const AttentionOptions& options, const RunSizes& n)
      : in_(in), options_(options), n_(n), plan_(planRun(options, n)),
        // The mask decides which cached keys each row may use (padding, segments, ...); the
        // cache decides which keys exist at all.
        terms_(maskTerms(options.mask, n.B, n.L, n.L, in.valid_lens, in.key_padding, in.attn_mask)),
        q_(n.H * n.d), raw_(n.L), scores_(n.L), probs_(n.L), context_(n.D), allowed_(n.L) {}

  // Projects token t: k and v [B, G*d] for the cache, RoPE applied to k at position t.
  CacheEntry project(int64_t t) const {
    const int64_t B = n_.B, L = n_.L, G = n_.G, d = n_.d;
    CacheEntry entry{t, std::vector<float>(B * G * d), std::vector<float>(B * G * d)};
    for (int64_t b = 0; b < B; ++b) {
      linearInto(&in_.key.data[(b * L + t) * n_.Dk], 1, in_.w_k, in_.b_k, &entry.k[b * G * d]);
      linearInto(&in_.value.data[(b * L + t) * n_.Dv], 1, in_.w_v, in_.b_v, &entry.v[b * G * d]);
      if (options_.rope) {
        for (int64_t g = 0; g < G; ++g)
          rotateAt(&entry.k[(b * G + g) * d], d, t, options_.rope_base, options_.rope_style, options_.rope_inv_freq);
      }
    }
    return entry;
  }

  // Row t of the map and output row t against the cache: the kernel's score pass over the
  // cached positions.
  void attend(const std::deque<CacheEntry>& cache, DecodeStep& step) {
    const int64_t B = n_.B, H = n_.H, L = n_.L, t = step.position;
    step.row_probs = Tensor({B, H, L}, 0.0f);
    step.output = Tensor({B, n_.D});
    // Keys not in the cache (future or evicted) cannot be attended.
    std::vector<uint8_t> cached_row(L, 0);
    for (int64_t j : step.cached) cached_row[j] = 1;
    for (int64_t b = 0; b < B; ++b) {
      linearInto(&in_.query.data[(b * L + t) * n_.Dq], 1, in_.w_q, in_.b_q, q_.data());
      maskRow(terms_, b, t, L, allowed_.data(), mask_scratch_);
      for (int64_t j = 0; j < L; ++j) allowed_[j] &= cached_row[j];
      const RowSpan span = rowSpans(allowed_.data(), 1, L)[0];
      for (int64_t h = 0; h < H; ++h) {
        attendHead(cache, b, h, t, span);
        std::copy(probs_.begin(), probs_.end(), &step.row_probs.data[(b * H + h) * L]);
      }
      linearInto(context_.data(), 1, in_.w_o, in_.b_o, &step.output.data[b * n_.D]);
    }
  }

 private:
  // Head h of batch item b at row t: probs_ [L] and context_[h*d .. h*d+d) = probs . V.
  void attendHead(const std::deque<CacheEntry>& cache, int64_t b, int64_t h, int64_t t, RowSpan span) {
    const int64_t G = n_.G, d = n_.d;
    float* qh = &q_[h * d];
    if (options_.rope) rotateAt(qh, d, t, options_.rope_base, options_.rope_style, options_.rope_inv_freq);
    const int64_t g = kvHeadOf(h, n_.H, G);
    std::fill(raw_.begin(), raw_.end(), 0.0f);
    for (const CacheEntry& e : cache) {
      const float* key = &e.k[(b * G + g) * d];
      float dot = 0.0f;
      for (int64_t c = 0; c < d; ++c) dot += qh[c] * key[c];
      raw_[e.position] = dot;
    }
    scoreRow(plan_.ruleForHead(h), t, raw_.data(), allowed_.data(), span, n_.L, scores_.data(), probs_.data());
    float* ctx = &context_[h * d];
    std::fill(ctx, ctx + d, 0.0f);
    for (const CacheEntry& e : cache) {
      const float p = probs_[e.position];
      const float* value = &e.v[(b * G + g) * d];
      for (int64_t c = 0; c < d; ++c) ctx[c] += p * value[c];
    }
  }

  const AttentionInputs& in_;
  const AttentionOptions& options_;
  const RunSizes n_;
  const RunPlan plan_;
  const std::vector<MaskTerm> terms_;
  std::vector<float> q_, raw_, scores_, probs_, context_;  // [H*d], [L], [L], [L], [D]
  std::vector<uint8_t> allowed_, mask_scratch_;            // [L], maskRow's
};

// Evicts the keys no query after t can see (older than the window, not a sink), appending
// their positions to `evicted`.
void evictAfter(int64_t t, const KvCacheRun& run, std::deque<CacheEntry>& cache, std::vector<int64_t>& evicted) {
  if (run.window < 0) return;
  const int64_t oldest_needed = t + 1 - run.window;
  for (auto it = cache.begin(); it != cache.end();) {
    if (it->position < oldest_needed && it->position >= run.sinks) {
      evicted.push_back(it->position);
      it = cache.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

KvCacheRun decodeWithKvCache(const AttentionInputs& in, const AttentionOptions& options) {
  const RunSizes n = validateInputs(in, options);
  checkDecodable(in, n, options);
  const int64_t B = n.B, L = n.L, D = n.D, H = n.H, G = n.G, d = n.d;
  // Every step keeps its row [B, H, L] and its cached / evicted positions (up to L each).
  const double steps = static_cast<double>(L);
  checkMemory(static_cast<uint64_t>(steps * (4.0 * B * H * L + 16.0 * L + 4.0 * B * D) + 8.0 * steps * B * G * d));
  StepDecoder decoder(in, options, n);

  KvCacheRun run = emptyRun(n, options.mask);
  std::deque<CacheEntry> cache;
  std::vector<int64_t> evicted;
  for (int64_t t = 0; t < L; ++t) {
    DecodeStep step;
    step.position = t;
    cache.push_back(decoder.project(t));
    for (const CacheEntry& e : cache) step.cached.push_back(e.position);
    decoder.attend(cache, step);
    evictAfter(t, run, cache, evicted);
    step.evicted = evicted;
    step.entries_after = static_cast<int64_t>(cache.size());
    run.steps.push_back(std::move(step));
  }
  return run;
}

MaskSpec withCacheWindow(MaskSpec layer, const CacheWindow& cache) {
  if (!cache.on()) return layer;
  layer.causal = true;
  layer.causal_window = layer.causal_window >= 0 ? std::min(layer.causal_window, cache.window) : cache.window;
  layer.sinks = cache.sinks > 0 ? cache.sinks : -1;
  return layer;
}

std::vector<float> stepRowDifference(const KvCacheRun& run, const AttentionTrace& full) {
  if (full.B != run.B || full.H != run.H || full.L != run.L || full.S != run.L ||
      static_cast<int64_t>(run.steps.size()) != run.L)
    return {};
  const int64_t B = run.B, H = run.H, L = run.L;
  std::vector<float> diff(L, 0.0f);
  for (int64_t t = 0; t < L; ++t)
    for (int64_t bh = 0; bh < B * H; ++bh) {
      const float* row = &run.steps[t].row_probs.data[bh * L];
      const float* want = &full.probs.data[(bh * L + t) * L];
      for (int64_t j = 0; j < L; ++j) diff[t] = std::max(diff[t], std::fabs(row[j] - want[j]));
    }
  return diff;
}

}  // namespace attnscope
