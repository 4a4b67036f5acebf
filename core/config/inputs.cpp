// buildInputs: the settings' input source, dispatched to its own file.
#include "config/inputs.h"

#include <algorithm>

#include "config/text_input.h"

namespace attnscope {

std::vector<int64_t> resolveValidLens(const std::vector<int64_t>& requested, const std::vector<int64_t>& natural,
                                      int64_t S) {
  std::vector<int64_t> lens = natural;
  for (size_t b = 0; b < lens.size() && b < requested.size(); ++b)
    if (requested[b] != kFollowValidLen) lens[b] = std::clamp<int64_t>(requested[b], 0, S);
  return lens;
}

namespace {

AttentionInputs sourceInputs(const Settings& s) {
  switch (s.source) {
    case InputSource::Bundle: return bundleInputs(s).inputs;
    case InputSource::Synthetic: return syntheticInputs(s);
    case InputSource::Text: break;
    case InputSource::Model:
      throw InputError("model " + s.model + ": a trained model brings its own inputs (see config/model_source.h)");
  }
  return textInputs(s);
}

}  // namespace

AttentionInputs buildInputs(const Settings& s) {
  if (s.heads < 1) throw InputError("heads must be >= 1, got H=" + std::to_string(s.heads));
  if (s.head_dim < 1) throw InputError("head size must be >= 1, got d=" + std::to_string(s.head_dim));
  AttentionInputs in = sourceInputs(s);
  groupKeyValueHeads(s, in);
  return in;
}

void groupKeyValueHeads(const Settings& s, AttentionInputs& in) {
  if (s.kv_heads > 0 && s.kv_heads != s.heads && in.w_k.dim(0) == in.w_q.dim(0))
    poolKeyValueHeads(in, s.heads, s.kv_heads);
}

}  // namespace attnscope
