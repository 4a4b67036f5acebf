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

void setZoom(AppState& state, CellWindow wanted) {
  const ViewModel* v = shownView(state);
  const CellWindow zoom = v ? clampWindow(wanted, v->mapL(), v->mapS()) : CellWindow{};
  if (zoom == state.view.zoom) return;
  state.view.zoom = zoom;
  markStateChanged(state);
}

const HeadTable* shownHeadTable(const AppState& state) {
  const HeadTable* table = state.compute.head_table.get();
  const ViewModel* view = shownView(state);
  const bool matches = table && view && table->source_stamp == view->stamp.value() && table->layers == view->layers &&
                       table->H == view->H && table->B == view->B;
  return matches ? table : nullptr;
}

bool gridFollowsTable(const AppState& state) {
  return state.view.table.order_grid && shownHeadTable(state) && !state.view.table.order.empty() &&
         !mapKindInfo(state.view.map_kind).across_layers;
}

float focusedDiffMax(const AppState& state) {
  const Tensor& diff = state.compute.probDiffMax();  // [B, H]
  if (diff.shape.size() != 2 || diff.empty()) return -1.0f;
  const ViewFocus& f = state.view.focus;
  if (f.batch_item >= diff.dim(0) || f.head >= diff.dim(1)) return -1.0f;
  return diff.data[f.batch_item * diff.dim(1) + f.head];
}

std::string mistakeDiffSummary(const AppState& state) {
  if (!state.compute.correctView()) return "";
  if (!state.compute.error().empty()) {
    return "the buggy code crashes (left); right: what it should be, without the mistake";
  }
  const float focused = focusedDiffMax(state);
  if (focused < 0.0f) return "";
  const Tensor& diff = state.compute.probDiffMax();  // [B, H]
  const int64_t H = diff.dim(1);
  const float* row = diff.data.data() + state.view.focus.batch_item * H;
  const int64_t worst = std::max_element(row, row + H) - row;
  char text[160];
  std::snprintf(text, sizeof text, "max |\xCE\x94p| = %.3g over head %lld   (all heads: %.3g, head %lld)",
                focused, static_cast<long long>(state.view.focus.head), row[worst], static_cast<long long>(worst));
  return text;
}

void chooseQuery(AppState& state, int64_t query, bool add) {
  std::vector<int64_t>& q = state.view.query_choice.queries;
  const auto found = std::lower_bound(q.begin(), q.end(), query);
  if (!add) q = {query};
  else if (found != q.end() && *found == query) q.erase(found);
  else q.insert(found, query);
}

bool overviewShown(const AppState& state, const ViewModel& view) {
  return state.view.overview_chosen.value_or(view.layers * view.H > kOverviewAutoHeads);
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

void recompute(AppState& state) {
  recomputeNow(state.compute, state.settings, computeAsk(state));
  markStateChanged(state);
}

void saveLater(AppState& state) {
  state.persist.dirty = true;
  state.persist.changed_at = std::chrono::steady_clock::now();
  markStateChanged(state);
}

void setModelInterventions(AppState& state, const Interventions& interventions) {
  state.settings.model_ablate = interventions.ablateSpec();
  state.settings.model_knockout = interventions.knockoutSpec();
  recompute(state);
  saveLater(state);
}

void setHeadAblation(AppState& state, int64_t layer, int64_t head, std::optional<AblationMode> mode) {
  Interventions in = parseInterventions(state.settings.model_ablate, state.settings.model_knockout);
  auto& list = in.ablations;
  list.erase(std::remove_if(list.begin(), list.end(), [&](const HeadAblation& a) { return a.layer == layer && a.head == head; }),
             list.end());
  if (mode) list.push_back({layer, head, *mode, ""});
  setModelInterventions(state, in);
}


}  // namespace attnscope
