#include "gui/shell/app_state.h"

#include <algorithm>
#include <cstdio>

namespace attnscope {

const ViewModel* shownView(const AppState& state) {
  const ComputeState& c = state.compute;
  const bool crashed_with_mistake = !c.error().empty() && c.correctView();
  return crashed_with_mistake ? c.correctView().get() : c.view.get();
}

FocusLimits focusLimits(const AppState& state) {
  const ViewModel* v = shownView(state);
  if (!v) return {};
  return {true, v->layers, v->B, v->H};
}

void setFocus(AppState& state, ViewFocus wanted) {
  const ViewFocus focus = clampFocus(wanted, focusLimits(state));
  if (focus == state.view.focus) return;
  state.view.focus = focus;
  saveLater(state);
}

void pinQueryRow(AppState& state, int64_t row) {
  state.view.selected_query = row;
  state.view.pinned_text = state.settings.model_text;
  markStateChanged(state);
}

void unpinQueryRow(AppState& state) {
  if (state.view.selected_query < 0) return;
  state.view.selected_query = -1;
  markStateChanged(state);
}

void saveLater(AppState& state) {
  state.persist.dirty = true;
  state.persist.changed_at = std::chrono::steady_clock::now();
  markStateChanged(state);
}


}  // namespace attnscope
