#include "gui/jobs/compute_sync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "model/local_models.h"

namespace attnscope {

namespace {

constexpr auto kSpinnerDelay = std::chrono::milliseconds(100);
const ComputeResult kNoResult;  // what the accessors read before the first result

}  // namespace

const ComputeResult& ComputeState::result() const { return latest ? *latest : kNoResult; }

namespace {

// A cancelled or failed load: the model fields go back to the shown model's (posted as such,
// so the maps shown are current again; its weights load again on the next run that needs
// them). False when nothing is shown yet (the maps stay empty).
bool returnToShownModel(ComputeState& c, Settings& settings) {
  if (!c.view) return false;
  settings.source = c.shown_settings.source;
  settings.model = c.shown_settings.model;
  settings.model_text = c.shown_settings.model_text;
  c.posted_settings = settings;
  c.cancelled = false;
  return true;
}

// A folder whose weights failed to load while another model is shown: that model stays, as
// after a cancelled load; the error goes to load_error (the Open dialog shows it), not to
// the maps, which stay current. The result is kept without its error.
std::shared_ptr<const ComputeResult> keepShownModel(ComputeState& c, Settings& settings, Received& received,
                                                    std::shared_ptr<const ComputeResult> result) {
  c.load_failed = result->load_failed;
  c.load_error = result->error;
  if (!returnToShownModel(c, settings)) return result;
  received.settings_returned = true;
  ++c.load_failures;
  auto kept = std::make_shared<ComputeResult>(*result);
  kept->error.clear();
  kept->facts = c.facts;  // the shown model's sizes
  return kept;
}

// The head table measured after a result: taken when it is the newest job's view's (c.view
// may be that view extended with rollout / flow: layer_maps restamps the table for it).
// True when one came.
bool receiveHeadTable(ComputeState& c) {
  const std::shared_ptr<const HeadTableResult> measured = c.worker->pollHeadTable();
  if (!measured) return false;
  const auto shows = [&](const std::shared_ptr<const ViewModel>& view) {
    return view && measured->table && measured->table->source_stamp == view->stamp.value();
  };
  if (c.latest && (shows(c.latest->view) || shows(c.latest->correct_view))) c.head_table = measured->table;
  if (measured->table) c.stages.head_table_ms = measured->milliseconds;  // not a table stopped for a newer edit
  return true;
}

// A result with a view: what it shows, and the edit that asked for it (edit_to_maps_ms).
void showResult(ComputeState& c, const ComputeResult& result) {
  // Until the new view's head table comes, the last one stays where it has the same heads
  // (its numbers a keystroke old), so the table does not blink at every keystroke.
  const ViewModel* shown = result.view ? result.view.get() : result.correct_view.get();
  const HeadTable* table = c.head_table.get();
  if (shown && table && (table->layers != shown->layers || table->H != shown->H || table->B != shown->B))
    c.head_table = nullptr;
  if (result.view) {
    c.view = result.view;
    c.compute_ms = result.milliseconds;
    c.stages = result.stages;
    c.shown_settings = result.settings;
    c.shown_edit.reset();
    for (const auto& [generation, edited] : c.posted_edits)
      if (generation == result.generation) c.shown_edit = edited;
    c.maps_generation = result.generation;
  }
  // Older posts can no longer be shown (a newer job supersedes them).
  c.posted_edits.erase(std::remove_if(c.posted_edits.begin(), c.posted_edits.end(),
                                      [&](const auto& post) { return post.first <= result.generation; }),
                       c.posted_edits.end());
}

}  // namespace

Received receiveResult(ComputeState& c, Settings& settings) {
  std::shared_ptr<const ComputeResult> result = c.worker->poll();
  Received received;
  if (!result) {
    received.table = receiveHeadTable(c);
    return received;
  }
  received.taken = true;
  if (!result->load_failed.empty()) result = keepShownModel(c, settings, received, std::move(result));
  c.cancelled = result->cancelled;
  if (!result->cancelled) c.facts = result->facts;  // a cancelled job's sizes were never shown
  const Settings& s = result->settings;
  if (result->view && s.source == InputSource::Model && (s.model.find('/') != std::string::npos || isStoreName(s.model)))
    received.ran_folder = s.model;
  showResult(c, *result);
  if (!result->load_cancelled.empty()) {
    c.load_cancelled = result->load_cancelled;
    received.settings_returned = returnToShownModel(c, settings) || received.settings_returned;
  }
  c.latest = std::move(result);
  received.table = receiveHeadTable(c);  // after the view it was measured on
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
  c.posted_edits.emplace_back(c.posted_generation, c.frame_started);
  c.cancelled = false;  // the maps shown stay, marked in progress instead
  c.load_cancelled.clear();
  c.load_failed.clear();
}

bool noteMapsDrawn(ComputeState& c) {
  if (!c.shown_edit) return false;
  c.edit_to_maps_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - *c.shown_edit).count();
  c.shown_edit.reset();
  return true;
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
  line["load_failed"] = c.load_failed;        // the folder whose load failed ("" = none since the last post)
  line["load_error"] = c.load_error;          // why the last failed load failed
  line["compute_runs"] = c.runs();
  line["projections_reused"] = c.projectionsReused();
  line["raw_scores_reused"] = c.rawScoresReused();
  line["compute_ms"] = c.compute_ms;
  // From the edit (the frame that read it) to the end of the first frame drawing its maps.
  line["edit_to_maps_ms"] = c.edit_to_maps_ms;
  line["maps_generation"] = c.maps_generation;
  line["stages"] = {{"engine_ms", c.stages.engine_ms},
                    {"view_ms", c.stages.view_ms},
                    {"head_table_ms", c.stages.head_table_ms},
                    {"upload_ms", c.upload_ms}};
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
