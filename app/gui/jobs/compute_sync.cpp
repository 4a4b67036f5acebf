#include "gui/jobs/compute_sync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace attnscope {
namespace {

constexpr auto kSpinnerDelay = std::chrono::milliseconds(100);

}  // namespace

void receiveResult(AppState& state) {
  ComputeState& c = state.compute;
  std::optional<ComputeResult> result = c.worker->poll();
  if (!result) return;
  c.trace_generation = result->generation;
  c.error = result->error;
  c.cancelled = result->cancelled;
  if (!result->cancelled) c.facts = result->facts;  // a cancelled job's sizes were never shown
  c.runs = result->runs;
  c.projections_reused = result->projections_reused;
  c.raw_scores_reused = result->raw_scores_reused;
  c.correct_view = result->correct_view;
  c.prob_diff_max = std::move(result->prob_diff_max);
  c.decode = result->decode;
  c.decode_row_diff = std::move(result->decode_row_diff);
  c.decode_error = result->decode_error;
  if (result->view || result->correct_view) c.head_table = result->head_table;  // the shown view changed
  if (result->view) {
    c.view = result->view;
    c.compute_ms = result->milliseconds;
  }
  setFocus(state, state.view.focus);  // fewer heads or batch items than before: clamp
  setZoom(state, state.view.zoom);    // a smaller map: the window moves inside it
  setStep(state, state.stepper.step);  // a shorter sequence: clamp
  markStateChanged(state);
}

void postIfSettingsChanged(AppState& state) {
  ComputeState& c = state.compute;
  // A typed D the heads do not divide blocks sandbox runs only (a trained model ignores it).
  if (!state.drafts.control_error.empty() && state.settings.source != InputSource::Model) return;
  // Opening the stepper asks for the decoding of the same settings.
  const bool decode = state.stepper.open;
  if (c.posted_generation != 0 && !computeSettingsDiffer(state.settings, c.posted_settings) &&
      (!decode || c.posted_decode))
    return;
  recomputeNow(state);
}

void recomputeNow(AppState& state) {
  ComputeState& c = state.compute;
  const bool decode = state.stepper.open;
  c.posted_settings = state.settings;
  c.posted_decode = decode;
  c.posted_generation = c.worker->post(state.settings, decode);
  c.posted_at = std::chrono::steady_clock::now();
  c.cancelled = false;  // the maps shown stay, marked in progress instead
  markStateChanged(state);
}

void cancelCompute(AppState& state) {
  if (state.compute.progress < 0.0) return;  // nothing cancellable runs
  state.compute.worker->cancel();
  markStateChanged(state);
}

void updateBusy(AppState& state) {
  ComputeState& c = state.compute;
  const double fraction = c.pending() ? c.worker->progress() : -1.0;
  const double progress = fraction < 0.0 ? -1.0 : std::floor(fraction * 100.0) / 100.0;
  if (progress != c.progress) {
    c.progress = progress;
    markStateChanged(state);
  }
  const bool busy = c.pending() && std::chrono::steady_clock::now() - c.posted_at > kSpinnerDelay;
  if (busy == c.busy) return;
  c.busy = busy;
  markStateChanged(state);
}

void updateZoomTile(AppState& state) {
  ZoomTileState& z = state.zoom_tile;
  const ViewModel* v = state.compute.view.get();
  TileRequest want;
  if (v && v->tiled && !state.view.zoom.whole()) {
    want.maps = v->tiled;
    want.b = std::clamp<int64_t>(state.view.focus.batch_item, 0, v->B - 1);
    want.h = std::clamp<int64_t>(state.view.focus.head, 0, v->H - 1);
    want.window = resolveWindow(state.view.zoom, v->mapL(), v->mapS());
  }
  if (want != z.posted) {
    z.posted = want;
    if (want.maps) z.worker->post(want);
    else z.tile.reset();  // not zoomed (or no tiled source): nothing to keep alive
    markStateChanged(state);
  }
  if (std::shared_ptr<const WindowTile> tile = z.worker->poll()) {
    if (z.posted.maps) z.tile = std::move(tile);
    markStateChanged(state);
  }
}

}  // namespace attnscope
