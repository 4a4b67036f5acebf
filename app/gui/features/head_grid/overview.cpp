#include "gui/features/head_grid/overview.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gui/shell/app_state.h"

namespace attnscope {

namespace {

// A finished sweep comes back: kept, and (done) the overview's colouring from now on.
void takeSweep(AppState& state, OverviewState& o) {
  SweepState& sweep = o.sweep;
  if (!sweep.running) return;
  sweep.progress = std::max(0.0, sweep.worker->progress());
  if (sweep.progress >= sweep.logged_progress + 0.1) {  // the state log sees it advance
    sweep.logged_progress = sweep.progress;
    markStateChanged(state);
  }
  std::shared_ptr<const SweepResult> result = sweep.worker->poll();
  if (!result) return;
  sweep.running = false;
  sweep.result = std::move(result);
  if (sweep.result->sweep) o.metric = kSweepMetric;
  markStateChanged(state);
}

}  // namespace

void updateOverview(AppState& state) {
  OverviewState& o = state.feature<OverviewState>();
  takeSweep(state, o);
  const HeadTable* table = shownHeadTable(state);
  const int64_t b = state.view.focus.batch_item;
  const bool by_sweep = o.metric == kSweepMetric;
  const MetricInfo* metric = findHeadMetric(o.metric);
  if (!metric && !by_sweep) metric = &headMetricInfos().front(), o.metric = metric->name;
  const uint64_t stamp = table ? table->source_stamp : 0;
  const SweepResult* sweep = o.sweep.result.get();
  if (stamp == o.built_stamp && b == o.built_batch && o.metric == o.built_metric && o.auto_range == o.built_auto &&
      sweep == o.built_sweep)
    return;
  if (by_sweep) o.data = sweep && sweep->sweep ? effectOverview(sweep->sweep->effect) : HeadOverview{};
  else o.data = table && b < table->B ? headOverview(*table, *metric, b, o.auto_range) : HeadOverview{};
  o.built_stamp = stamp, o.built_batch = b, o.built_metric = o.metric, o.built_auto = o.auto_range, o.built_sweep = sweep;
  markStateChanged(state);
}

void startAblationSweep(AppState& state) {
  SweepState& sweep = state.feature<OverviewState>().sweep;
  if (!sweep.worker) sweep.worker = std::make_unique<SweepWorker>();
  SweepRequest request;
  if (state.compute.worker) request.weights = state.compute.worker->loadedWeights();
  request.text = state.settings.model_text;
  request.truncate = state.settings.model_truncate;
  request.position = state.view.selected_query >= 0 ? state.view.selected_query : -1;
  request.mode = sweep.mean ? AblationMode::Mean : AblationMode::Zero;
  sweep.worker->start(std::move(request));
  sweep.running = true;
  sweep.progress = sweep.logged_progress = 0.0;
  markStateChanged(state);
}

void cancelAblationSweep(AppState& state) {
  SweepState& sweep = state.feature<OverviewState>().sweep;
  if (sweep.running) sweep.worker->cancel();  // the cancelled result still comes back (takeSweep)
}

bool ablationSweepRunning(const AppState& state) { return state.feature<OverviewState>().sweep.running; }

namespace {

nlohmann::json sweepJson(const SweepState& sweep) {
  nlohmann::json line = {{"running", sweep.running}, {"progress", sweep.progress}, {"mean", sweep.mean},
                         {"done", false}, {"cancelled", false}, {"error", ""}};
  const SweepResult* r = sweep.result.get();
  if (!r) return line;
  line["cancelled"] = r->cancelled, line["error"] = r->error, line["text"] = r->text;
  if (!r->sweep) return line;
  const AblationSweep& s = *r->sweep;
  nlohmann::json effect = nlohmann::json::array();
  for (int64_t l = 0; l < s.effect.shape[0]; ++l) {
    const auto row = s.effect.data.begin() + l * s.effect.shape[1];
    effect.push_back(std::vector<float>(row, row + s.effect.shape[1]));
  }
  line["done"] = true, line["position"] = s.position, line["top"] = s.top, line["logprob"] = s.logprob;
  line["mode"] = r->mode == AblationMode::Mean ? "mean" : "zero";
  line["effect"] = effect;
  return line;
}

}  // namespace

void overviewToJson(const AppState& state, nlohmann::json& line) {
  const OverviewState& o = state.feature<OverviewState>();
  const ViewModel* view = shownView(state);
  const bool shown = view && overviewShown(state, *view);
  nlohmann::json cells = nlohmann::json::array();  // [rows][cols] values (null: not measured)
  for (int64_t l = 0; shown && l < o.data.layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t h = 0; h < o.data.H; ++h) {
      const double v = o.data.at(l, h);
      row.push_back(std::isnan(v) ? nlohmann::json() : nlohmann::json(v));
    }
    cells.push_back(row);
  }
  nlohmann::json hovered;
  if (shown && o.hovered >= 0 && o.data.H > 0) hovered = {o.hovered / o.data.H, o.hovered % o.data.H};
  line["overview"] = {{"shown", shown},
                      {"auto", !state.view.overview_chosen.has_value()},
                      {"metric", o.metric},
                      {"rows", shown ? view->layers : 0},
                      {"cols", shown ? view->H : 0},
                      {"low", o.data.low},
                      {"high", o.data.high},
                      {"cells", cells},
                      {"cell", {o.cell_w, o.cell_h, o.gap}},
                      {"hovered", hovered},
                      {"scale", {{"auto", o.data.scale.automatic},
                                 {"low", o.data.scale.low},
                                 {"high", o.data.scale.high},
                                 {"rule", o.data.scale.rule},
                                 {"narrow", o.data.scale.narrow},
                                 {"warning", o.data.scale.warning}}},
                      {"sweep", sweepJson(o.sweep)}};
}

}  // namespace attnscope
