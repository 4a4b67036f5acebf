#include "attention/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "attention/kernel.h"
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

}  // namespace

KvCacheRun decodeWithKvCache(const AttentionInputs& in, const AttentionOptions& options) {
  const RunSizes n = validateInputs(in, options);
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
  const int64_t B = n.B, L = n.L, D = n.D, H = n.H, G = n.G, d = n.d;
  // Every step keeps its row [B, H, L] and its cached / evicted positions (up to L each).
  const double steps = static_cast<double>(L);
  checkMemory(static_cast<uint64_t>(steps * (4.0 * B * H * L + 16.0 * L + 4.0 * B * D) + 8.0 * steps * B * G * d));
  const RunPlan plan = planRun(options, n);
  // The mask decides which cached keys each row may use (padding, segments, ...); the
  // cache decides which keys exist at all.
  const std::vector<MaskTerm> terms = maskTerms(m, B, L, L, in.valid_lens, in.key_padding, in.attn_mask);

  KvCacheRun run;
  run.B = B, run.L = L, run.D = D, run.H = H, run.G = G, run.d = d;
  run.sinks = std::max<int64_t>(m.sinks, 0);
  run.window = causalWindow(m);
  // Query t + 1 sees keys t + 1 - W .. t + 1, so after step t the cache keeps the W most
  // recent keys plus the k sinks.
  if (run.window >= 0) run.capacity = run.sinks + run.window;

  std::deque<CacheEntry> cache;
  std::vector<int64_t> evicted;
  std::vector<float> q(H * d), raw(L), scores(L), probs(L), context(D);
  std::vector<uint8_t> allowed(L), scratch;
  for (int64_t t = 0; t < L; ++t) {
    DecodeStep step;
    step.position = t;
    // ---- project the new token: k and v [B, G*d] into the cache; RoPE at position t ----
    CacheEntry entry{t, std::vector<float>(B * G * d), std::vector<float>(B * G * d)};
    for (int64_t b = 0; b < B; ++b) {
      linearInto(&in.key.data[(b * L + t) * n.Dk], 1, in.w_k, in.b_k, &entry.k[b * G * d]);
      linearInto(&in.value.data[(b * L + t) * n.Dv], 1, in.w_v, in.b_v, &entry.v[b * G * d]);
      if (options.rope) {
        for (int64_t g = 0; g < G; ++g)
          rotateAt(&entry.k[(b * G + g) * d], d, t, options.rope_base, options.rope_style);
      }
    }
    cache.push_back(std::move(entry));
    for (const CacheEntry& e : cache) step.cached.push_back(e.position);

    // ---- the new row against the cache: the kernel's score pass over positions 0..t ----
    step.row_probs = Tensor({B, H, L}, 0.0f);
    step.output = Tensor({B, D});
    for (int64_t b = 0; b < B; ++b) {
      linearInto(&in.query.data[(b * L + t) * n.Dq], 1, in.w_q, in.b_q, q.data());
      maskRow(terms, b, t, L, allowed.data(), scratch);
      // Keys not in the cache (future or evicted) cannot be attended.
      std::vector<uint8_t> cached_row(L, 0);
      for (int64_t j : step.cached) cached_row[j] = 1;
      for (int64_t j = 0; j < L; ++j) allowed[j] &= cached_row[j];
      const RowSpan span = rowSpans(allowed.data(), 1, L)[0];
      for (int64_t h = 0; h < H; ++h) {
        float* qh = &q[h * d];
        if (options.rope) rotateAt(qh, d, t, options.rope_base, options.rope_style);
        const int64_t g = kvHeadOf(h, H, G);
        std::fill(raw.begin(), raw.end(), 0.0f);
        for (const CacheEntry& e : cache) {
          const float* key = &e.k[(b * G + g) * d];
          float dot = 0.0f;
          for (int64_t c = 0; c < d; ++c) dot += qh[c] * key[c];
          raw[e.position] = dot;
        }
        scoreRow(plan.ruleForHead(h), t, raw.data(), allowed.data(), span, L, scores.data(), probs.data());
        std::copy(probs.begin(), probs.end(), &step.row_probs.data[(b * H + h) * L]);
        // context_h = probs . V over the cache
        float* ctx = &context[h * d];
        std::fill(ctx, ctx + d, 0.0f);
        for (const CacheEntry& e : cache) {
          const float p = probs[e.position];
          const float* value = &e.v[(b * G + g) * d];
          for (int64_t c = 0; c < d; ++c) ctx[c] += p * value[c];
        }
      }
      linearInto(context.data(), 1, in.w_o, in.b_o, &step.output.data[b * D]);
    }

    // ---- eviction: keys no later query can see (older than the window, not a sink) ----
    if (run.window >= 0) {
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
    step.evicted = evicted;
    step.entries_after = static_cast<int64_t>(cache.size());
    run.steps.push_back(std::move(step));
  }
  return run;
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
