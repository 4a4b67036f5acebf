#include "analysis/map_stack.h"

namespace attnscope {

MapStack mapStackOf(const Tensor& probs, const BoolTensor& fully_masked,
                    std::vector<std::vector<std::string>> tokens) {
  const Shape& s = probs.shape;
  if (s.size() != 4 && s.size() != 5)
    throw InputError("attention maps: expected [B, H, L, S] or [layers, B, H, L, S], got " + shapeToString(s));
  MapStack stack;
  const size_t o = s.size() - 4;
  stack.layers = o == 0 ? 1 : s[0];
  stack.B = s[o];
  stack.H = s[o + 1];
  stack.L = s[o + 2];
  stack.S = s[o + 3];
  const int64_t block = stack.B * stack.H * stack.L * stack.S;  // [B, H, L, S]
  for (int64_t layer = 0; layer < stack.layers; ++layer) stack.probs.push_back(probs.data.data() + layer * block);
  if (!fully_masked.empty()) {
    if (fully_masked.shape != Shape{stack.B, stack.L})
      throw InputError("fully masked rows: expected " + shapeToString({stack.B, stack.L}) + ", got " +
                       shapeToString(fully_masked.shape));
    stack.fully_masked = fully_masked.data;
  }
  for (const auto& row : tokens) {
    if (static_cast<int64_t>(row.size()) != stack.L)
      throw InputError("tokens: " + std::to_string(row.size()) + " labels for L=" + std::to_string(stack.L));
  }
  if (tokens.size() > 1 && static_cast<int64_t>(tokens.size()) != stack.B)
    throw InputError("tokens: " + std::to_string(tokens.size()) + " batch items for B=" + std::to_string(stack.B));
  stack.tokens = std::move(tokens);
  return stack;
}

MapStack mapStackOf(const ViewModel& view) {
  MapStack stack;
  stack.layers = view.layers;
  stack.B = view.B;
  stack.H = view.H;
  stack.L = view.L;
  stack.S = view.S;
  for (const LayerMaps& layer : view.maps) stack.probs.push_back(layer.probs.get());
  if (view.hasMask()) {
    stack.fully_masked.assign(static_cast<size_t>(view.B * view.L), 0);
    for (int64_t b = 0; b < view.B; ++b) {
      const uint8_t* allowed = view.allowed(0, b);  // [L, S]
      for (int64_t i = 0; i < view.L; ++i) {
        bool any = false;
        for (int64_t j = 0; j < view.S && !any; ++j) any = allowed[i * view.S + j] != 0;
        stack.fully_masked[b * view.L + i] = !any;
      }
    }
  }
  stack.tokens = view.query_tokens;
  return stack;
}

}  // namespace attnscope
