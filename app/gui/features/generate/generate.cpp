#include "gui/features/generate/generate.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <exception>

#include "config/generation_bundle.h"
#include "config/model_source.h"
#include "figure/figure.h"
#include "gui/jobs/export_jobs.h"
#include "gui/jobs/compute_sync.h"
#include "gui/shell/app_state.h"

namespace attnscope {
namespace {

SamplingSettings samplingOf(const GenerateControls& c) {
  SamplingSettings s;
  s.greedy = c.greedy;
  s.temperature = std::max(1e-3, static_cast<double>(c.temperature));
  s.top_k = std::max(0, c.top_k);
  s.top_p = std::clamp(static_cast<double>(c.top_p), 1e-3, 1.0);
  s.seed = static_cast<uint64_t>(std::max(0, c.seed));
  return s;
}

// The newest row in the focus view's zoom window (a whole map shows it anyway).
void followNewestRow(AppState& state, const ViewModel& view) {
  CellWindow zoom = state.view.zoom;
  if (zoom.whole()) return;
  zoom.row0 = std::max<int64_t>(0, view.L - zoom.rows);
  zoom.col0 = std::max<int64_t>(0, view.S - zoom.cols);
  setZoom(state, zoom);
}

// The generation's view becomes the one every panel shows (as a compute result would).
void showSnapshot(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  if (!g.shown || !g.snapshot || !g.snapshot->view || state.compute.view == g.snapshot->view) return;
  state.compute.view = g.snapshot->view;
  state.compute.head_table = g.snapshot->head_table;
  state.view.table.order_generation = ~uint64_t{0};  // the table's order is measured again
  InputFacts& facts = state.compute.facts;  // the pipeline panel's sizes: the sequence so far
  facts.L = facts.S_key = facts.S_value = g.snapshot->view->L;
  followResult(state);  // the focus, the zoom and each feature's view clamp to it
  if (g.controls.follow) followNewestRow(state, *g.snapshot->view);
  markStateChanged(state);
}

void takeBundleResult(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  if (!g.writer) return;
  if (std::shared_ptr<const BundleWritten> written = g.writer->poll()) {
    g.bundle_error = written->error;
    showToast(state.exports, written->error.empty() ? "wrote generation bundle " + written->dir : written->error,
              !written->error.empty());
  }
}

}  // namespace

void startGeneration(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  if (!g.worker) g.worker = std::make_unique<GenerateWorker>();
  GenerateRequest request;
  try {
    request.folder = modelFolder(state.settings);
  } catch (const InputError& e) {
    showToast(state.exports, e.what(), true);
    return;
  }
  request.text = state.settings.model_text;
  request.truncate = state.settings.model_truncate;
  request.interventions = parseInterventions(state.settings.model_ablate, state.settings.model_knockout);
  request.tokens = std::max(1, g.controls.tokens);
  request.sampling = samplingOf(g.controls);
  request.recent_window = std::max(1, g.controls.recent_window);
  if (g.controls.cache_on) request.cache = {std::max(0, g.controls.cache_window), std::max(0, g.controls.cache_sinks)};
  if (state.compute.worker) request.weights = state.compute.worker->loadedWeights();  // the maps' weights, shared
  request.lens = computeAsk(state).lens;  // the Logit lens tab is open
  g.job = g.worker->start(std::move(request));
  // Follow: the predictions show the newest step, which a pin (a clicked map row or lens cell) would hide.
  if (g.controls.follow) unpinQueryRow(state);
  g.running = g.shown = true;
  g.stopped_by.clear();
  g.started_with = state.settings;
  g.snapshot.reset();
  markStateChanged(state);
}

void stopGeneration(AppState& state, const char* by) {
  GenerateState& g = state.feature<GenerateState>();
  if (!g.running) return;
  g.worker->stop();
  g.stopped_by = by;
  markStateChanged(state);
}

void updateGeneration(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  takeBundleResult(state);
  if (!g.worker) return;
  if (g.shown && computeSettingsDiffer(state.settings, g.started_with)) {
    stopGeneration(state, "text edited");
    g.shown = false;  // the next compute result replaces the generation's maps
    if (!computeSettingsDiffer(state.settings, state.compute.posted_settings)) recompute(state);
  }
  std::shared_ptr<const GenerationSnapshot> snapshot = g.worker->take();
  if (snapshot && snapshot->job == g.job) {
    g.snapshot = std::move(snapshot);
    if (!g.snapshot->stop.empty()) g.running = false;
    if (!g.snapshot->error.empty()) showToast(state.exports, g.snapshot->error, true);
    markStateChanged(state);
  }
  showSnapshot(state);
  state.view.follow_newest = g.running && g.controls.follow;
}

bool generateKey(AppState& state, const KeyPress& press) {
  const bool plain_ctrl = (press.mods & (GLFW_MOD_CONTROL | GLFW_MOD_SHIFT | GLFW_MOD_ALT)) == GLFW_MOD_CONTROL;
  if (press.key != GLFW_KEY_S || !plain_ctrl || !generationShown(state)) return false;
  requestGenerationBundle(state);
  return true;
}

bool generationRunning(const AppState& state) { return state.feature<GenerateState>().running; }

bool generationShown(const AppState& state) {
  const GenerateState& g = state.feature<GenerateState>();
  return g.shown && g.snapshot && g.snapshot->view && state.compute.view == g.snapshot->view;
}

void requestGenerationBundle(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  if (!generationShown(state)) return;
  if (!g.writer)
    g.writer = std::make_unique<BundleWriter>(
        [](BundleWrite& write, const BundleWriter::Job&) -> BundleWritten {
          try {
            const GenerationSnapshot& s = *write.generation;
            writeGenerationBundle(write.dir, {s.view.get(), s.tokens, s.prompt_length, s.steps, s.generated_text});
          } catch (const std::exception& e) {
            return {write.dir, e.what()};
          }
          return {write.dir, ""};
        },
        JobOptions{JobPolicy::Queue, 0, -1.0});
  g.last_bundle = freshFolderName(exportFolder(state.settings), "generation");
  g.bundle_error.clear();
  g.writer->post({g.last_bundle, g.snapshot});
  markStateChanged(state);
}

void finishGeneration(AppState& state) {
  state.feature<GenerateState>().worker.reset();  // a running generation stops at its next step
  state.feature<GenerateState>().writer.reset();  // Queue: a bundle being written is finished first
}

void generateToJson(const AppState& state, nlohmann::json& line) {
  const GenerateState& g = state.feature<GenerateState>();
  nlohmann::json j = {{"running", g.running}, {"shown", g.shown}, {"job", g.job}, {"stopped_by", g.stopped_by},
                      {"max_tokens", g.controls.tokens}, {"greedy", g.controls.greedy}, {"window", g.controls.recent_window},
                      {"seed", g.controls.seed}, {"temperature", g.controls.temperature},
                      {"follow", g.controls.follow}, {"cache_on", g.controls.cache_on},
                      {"cache_window", g.controls.cache_window}, {"cache_sinks", g.controls.cache_sinks},
                      {"bundle", g.last_bundle}, {"bundle_error", g.bundle_error},
                      {"bundle_writing", g.writer && g.writer->busy()}};
  const GenerationSnapshot* s = g.snapshot.get();
  j["steps"] = s ? static_cast<int64_t>(s->steps.size()) : 0;
  j["prompt_tokens"] = s ? s->prompt_length : 0;
  j["rows"] = s && s->view ? s->view->L : 0;
  j["stop"] = s ? s->stop : "";
  j["error"] = s ? s->error : "";
  j["weights_shared"] = s && s->shared_weights;
  j["text"] = s && s->generated_text.size() <= 200 ? s->generated_text : "";  // long ones: not logged
  j["last"] = nullptr;  // the newest step
  if (s && !s->steps.empty())
    j["last"] = {{"id", s->steps.back().id}, {"token", s->steps.back().token}, {"rank", s->steps.back().rank},
                 {"prob", s->steps.back().prob}};
  j["mass"] = nullptr;  // the focused head's series over the steps (the plots)
  if (s && s->mass && s->mass->steps > 0) {
    const ViewFocus& f = state.view.focus;
    const GenerationMass& m = *s->mass;
    if (f.layer < m.layers && f.head < m.H && f.batch_item < m.B) {
      const float* sink = m.sinkSeries(f.layer, f.batch_item, f.head);
      const float* recent = m.recentSeries(f.layer, f.batch_item, f.head);
      const SeriesScale &sink_scale = m.sinkScale(f.layer, f.batch_item, f.head),
                        &recent_scale = m.recentScale(f.layer, f.batch_item, f.head);
      j["mass"] = {{"layer", f.layer}, {"head", f.head}, {"window", m.window},
                   {"sink", std::vector<float>(sink, sink + m.steps)}, {"recent", std::vector<float>(recent, recent + m.steps)},
                   {"sink_range", {sink_scale.lo, sink_scale.hi}}, {"recent_range", {recent_scale.lo, recent_scale.hi}}};
    }
  }
  line["generate"] = j;
}

}  // namespace attnscope
