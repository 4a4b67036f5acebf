#include "gui/shell/app_state.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

namespace attnscope {

bool computeSettingsDiffer(const Settings& a, const Settings& b) {
  if (a.source != b.source || a.heads != b.heads || a.seed != b.seed || !(a.mask == b.mask) ||
      a.fill != b.fill || a.scale != b.scale || a.dropout != b.dropout || a.train != b.train ||
      a.valid_lens != b.valid_lens || a.mistake != b.mistake || a.kv_heads != b.kv_heads || a.rope != b.rope ||
      a.rope_base != b.rope_base || a.rope_style != b.rope_style || a.alibi != b.alibi || a.softcap != b.softcap) {
    return true;
  }
  if (a.scale == ScaleChoice::Temperature && a.temperature != b.temperature) return true;
  if (a.scale == ScaleChoice::Factor && a.scale_factor != b.scale_factor) return true;
  switch (a.source) {
    case InputSource::Text:
      return a.text != b.text || a.cross_attention != b.cross_attention ||
             (a.cross_attention && a.key_text != b.key_text) || a.head_dim != b.head_dim ||
             a.positional_encoding != b.positional_encoding || a.bias != b.bias;
    case InputSource::Synthetic:
      return a.synthetic_L != b.synthetic_L || a.synthetic_S != b.synthetic_S ||
             a.cross_attention != b.cross_attention || a.batch != b.batch || a.head_dim != b.head_dim ||
             a.bias != b.bias;
    case InputSource::Bundle:
      // Bundles without weights get seeded ones of size H * d.
      return a.bundle_path != b.bundle_path || a.head_dim != b.head_dim;
    case InputSource::Model:
      return a.model != b.model || a.model_text != b.model_text;
  }
  return false;
}

PredictionPosition predictionPosition(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->predictions.empty() || !state.compute.error.empty()) return {};
  const int64_t L = static_cast<int64_t>(v->predictions.size());
  if (state.view.hover.row >= 0 && state.view.hover.row < L) return {state.view.hover.row, "hovered"};
  if (state.view.selected_query >= 0 && state.view.selected_query < L) return {state.view.selected_query, "clicked"};
  return {L - 1, "last position"};
}

const ViewModel* shownView(const AppState& state) {
  const ComputeState& c = state.compute;
  const bool crashed_with_mistake = !c.error.empty() && c.correct_view;
  return crashed_with_mistake ? c.correct_view.get() : c.view.get();
}

const HeadTable* shownHeadTable(const AppState& state) {
  const HeadTable* table = state.compute.head_table.get();
  const ViewModel* view = shownView(state);
  const bool matches = table && view && table->source == view && table->layers == view->layers &&
                       table->H == view->H && table->B == view->B;
  return matches ? table : nullptr;
}

void updateHeadOrder(AppState& state) {
  HeadTableView& t = state.view.table;
  const HeadTable* table = shownHeadTable(state);
  const int64_t b = state.view.focus.batch_item;
  const uint64_t generation = state.compute.trace_generation;
  if (generation == t.order_generation && b == t.order_batch && t.sort == t.order_sort) return;
  t.order = table && b < table->B ? headOrder(*table, b, t.sort) : std::vector<int64_t>{};
  t.order_generation = generation, t.order_batch = b, t.order_sort = t.sort;
  markStateChanged(state);
}

bool gridFollowsTable(const AppState& state) {
  return state.view.table.order_grid && shownHeadTable(state) && !state.view.table.order.empty() &&
         !mapKindInfo(state.exports.selected).across_layers;
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

float focusedDiffMax(const AppState& state) {
  const Tensor& diff = state.compute.prob_diff_max;  // [B, H]
  if (diff.shape.size() != 2 || diff.empty()) return -1.0f;
  const ViewFocus& f = state.view.focus;
  if (f.batch_item >= diff.dim(0) || f.head >= diff.dim(1)) return -1.0f;
  return diff.data[f.batch_item * diff.dim(1) + f.head];
}

std::string mistakeDiffSummary(const AppState& state) {
  if (!state.compute.correct_view) return "";
  if (!state.compute.error.empty()) {
    return "the buggy code crashes (left); right: what it should be, without the mistake";
  }
  const float focused = focusedDiffMax(state);
  if (focused < 0.0f) return "";
  const Tensor& diff = state.compute.prob_diff_max;  // [B, H]
  const int64_t H = diff.dim(1);
  const float* row = diff.data.data() + state.view.focus.batch_item * H;
  const int64_t worst = std::max_element(row, row + H) - row;
  char text[160];
  std::snprintf(text, sizeof text, "max |\xCE\x94p| = %.3g over head %lld   (all heads: %.3g, head %lld)",
                focused, static_cast<long long>(state.view.focus.head), row[worst], static_cast<long long>(worst));
  return text;
}

const std::vector<float>& ropeDecayCurve(RopeDecayCurve& curve, int64_t d, float base, RopeStyle style) {
  if (curve.values.empty() || curve.d != d || curve.base != base || curve.style != style) {
    curve.d = d, curve.base = base, curve.style = style;
    curve.values = ropeScoreDecay(d, base, style, kRopeDecayDistance);
  }
  return curve.values;
}

void setStep(AppState& state, int64_t step) {
  const int64_t steps = state.compute.decode ? state.compute.decode->L : 0;
  step = std::clamp<int64_t>(step, 0, std::max<int64_t>(steps - 1, 0));
  if (state.stepper.playing && step >= steps - 1) state.stepper.playing = false;  // the end
  if (step == state.stepper.step) return;
  state.stepper.step = step;
  markStateChanged(state);
}

void toggleStepper(AppState& state) {
  state.stepper.open = !state.stepper.open;
  state.stepper.playing = false;
  markStateChanged(state);
}

void saveLater(AppState& state) {
  state.persist.dirty = true;
  state.persist.changed_at = std::chrono::steady_clock::now();
  markStateChanged(state);
}

void recordLayoutRect(AppState& state, const std::string& name, float x, float y, float w, float h) {
  if (!state.script.state_log) return;
  state.script.layout[name] = ScreenRect{x, y, w, h};
}

void recordLayout(AppState& state, const std::string& name) {
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  recordLayoutRect(state, name, min.x, min.y, max.x - min.x, max.y - min.y);
}

}  // namespace attnscope
