#include "gui/view_state.h"

#include <algorithm>

namespace attnscope {

ViewFocus clampFocus(ViewFocus focus, const FocusLimits& limits) {
  if (!limits.known) return focus;
  focus.layer = std::clamp<int64_t>(focus.layer, 0, limits.layers - 1);
  focus.batch_item = std::clamp<int64_t>(focus.batch_item, 0, limits.batch - 1);
  focus.head = std::clamp<int64_t>(focus.head, 0, limits.heads - 1);
  return focus;
}

}  // namespace attnscope
