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

}  // namespace attnscope
