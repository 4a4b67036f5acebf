#include "gui/jobs/compute_sync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace attnscope {

namespace {

constexpr auto kSpinnerDelay = std::chrono::milliseconds(100);
const ComputeResult kNoResult;  // what the accessors read before the first result

}  // namespace

const ComputeResult& ComputeState::result() const { return latest ? *latest : kNoResult; }

namespace {

// A cancelled load: the model fields go back to the shown model's (posted as such, so the
// maps shown are current again; its weights load again on the next run that needs them).
// True when the settings changed.
bool returnToShownModel(ComputeState& c, Settings& settings, const std::string& folder) {
  c.load_cancelled = folder;
  if (!c.view) return false;  // nothing shown yet: the maps stay empty, marked cancelled
  settings.source = c.shown_settings.source;
  settings.model = c.shown_settings.model;
  settings.model_text = c.shown_settings.model_text;
  c.posted_settings = settings;
  c.cancelled = false;
  return true;
}

}  // namespace

Received receiveResult(ComputeState& c, Settings& settings) {
  std::shared_ptr<const ComputeResult> result = c.worker->poll();
  if (!result) return {};
  Received received;
  received.taken = true;
  c.cancelled = result->cancelled;
  if (!result->cancelled) c.facts = result->facts;  // a cancelled job's sizes were never shown
  if (result->view || result->correct_view) c.head_table = result->head_table;  // the shown view changed
  if (result->view) {
    c.view = result->view;
    c.compute_ms = result->milliseconds;
    c.shown_settings = result->settings;
  }
  if (!result->load_cancelled.empty()) received.settings_returned = returnToShownModel(c, settings, result->load_cancelled);
  c.latest = std::move(result);
  return received;
}

bool postIfSettingsChanged(ComputeState& c, const Settings& settings, const ComputeAsk& ask) {
  if (ask.hold) return false;
  // Opening the stepper asks for the decoding of the same settings, opening the Logit lens
  // tab for the lens past its budget (the run keeps its residuals).
  if (c.posted_generation != 0 && !computeSettingsDiffer(settings, c.posted_settings) &&
      (!ask.decode || c.posted_decode) && (!ask.lens || c.posted_lens))
    return false;
  recomputeNow(c, settings, ask);
  return true;
}

void recomputeNow(ComputeState& c, const Settings& settings, const ComputeAsk& ask) {
  c.posted_settings = settings;
  c.posted_decode = ask.decode;
  c.posted_lens = ask.lens;
  c.posted_generation = c.worker->post(settings, ask.decode, ask.logit_rows, ask.lens);
  c.posted_at = std::chrono::steady_clock::now();
  c.cancelled = false;  // the maps shown stay, marked in progress instead
  c.load_cancelled.clear();
}

bool cancelCompute(ComputeState& c) {
  if (c.progress < 0.0) return false;  // nothing cancellable runs
  c.worker->cancel();
  return true;
}

bool updateBusy(ComputeState& c) {
  const double fraction = c.pending() ? c.worker->progress() : -1.0;
  const double progress = fraction < 0.0 ? -1.0 : std::floor(fraction * 100.0) / 100.0;
  const bool loading = progress >= 0.0 && c.worker->loading();
  const bool changed = progress != c.progress || loading != c.loading;
  c.progress = progress;
  c.loading = loading;
  const bool busy = c.pending() && std::chrono::steady_clock::now() - c.posted_at > kSpinnerDelay;
  if (busy == c.busy) return changed;
  c.busy = busy;
  return true;
}

void computeToJson(const ComputeState& c, nlohmann::json& line) {
  line["generation"] = c.traceGeneration();
  line["pending"] = c.pending();
  line["error"] = c.error();
  line["maps_stale"] = c.mapsStale();
  line["text_too_long"] = c.textTooLong();
  line["busy"] = c.busy;
  line["progress"] = c.progress;    // a tiled overview or a load in progress: fraction done; -1 otherwise
  line["loading"] = c.loading;      // ... a model folder's weights
  line["cancelled"] = c.cancelled;  // the latest job was cancelled (the maps are the previous result's)
  line["load_cancelled"] = c.load_cancelled;  // the folder whose load was cancelled ("" = none since the last post)
  line["compute_runs"] = c.runs();
  line["projections_reused"] = c.projectionsReused();
  line["raw_scores_reused"] = c.rawScoresReused();
  line["compute_ms"] = c.compute_ms;
  if (const ViewModel* v = c.view.get()) {
    line["view_source"] = viewSourceName(v->source);
    line["layers"] = v->layers;
    line["heads"] = v->H;
    line["B"] = v->B;
    line["L"] = v->L;
    line["S"] = v->S;
    line["warnings"] = v->warnings;
  }
  if (const AttentionTrace* t = c.trace()) {
    line["D"] = t->D;
    line["d"] = t->d;
    line["G"] = t->G;
    line["variants"] = nlohmann::json::array();
    for (Variant variant : t->variants) line["variants"].push_back(variantInfo(variant).name);
    line["components"] = nlohmann::json::array();
    for (const MaskComponent& component : t->mask.components) line["components"].push_back(component.name);
  }
}

}  // namespace attnscope
