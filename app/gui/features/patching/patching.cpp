#include "gui/features/patching/patching.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/model_source.h"
#include "figure/figure.h"
#include "gui/jobs/export_jobs.h"
#include "gui/shell/app_state.h"

namespace attnscope {
namespace {

bool tabOpen(const AppState& state) { return state.view.tab == FocusTab::Patching; }

// The sweep's inputs now (the model as the settings name it), or nullopt while the maps show no
// model run (its weights not loaded yet).
std::optional<PatchInputs> currentInputs(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (state.settings.source != InputSource::Model || !v || v->source != ViewSource::ModelRun) return std::nullopt;
  const Settings& s = state.settings;
  return PatchInputs{s.model, s.model_text, s.patch_corrupt, s.patch_answer, s.patch_wrong};
}

void postSweep(AppState& state, const PatchInputs& inputs) {
  PatchingState& p = state.feature<PatchingState>();
  PatchRequest request{"", {}, inputs.clean, inputs.corrupt, inputs.answer, inputs.wrong};
  p.posted = inputs;  // also when the folder is not found: tried again after the next edit, not every frame
  try {
    request.folder = modelFolder(state.settings);
  } catch (const InputError&) {
    return;  // the maps report it
  }
  if (!p.worker) p.worker = std::make_unique<PatchWorker>();
  if (state.compute.worker) request.weights = state.compute.worker->loadedWeights();  // the maps' weights, shared
  p.job = p.worker->post(std::move(request));
  p.running = true;
  p.cancelled = false;
  p.logged_progress = 0.0;
  markStateChanged(state);
}

nlohmann::json tableJson(const float* cells, int64_t rows, int64_t cols) {  // cells [rows, cols]
  nlohmann::json table = nlohmann::json::array();
  for (int64_t r = 0; r < rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < cols; ++c) {
      const float v = cells[r * cols + c];
      row.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
    }
    table.push_back(std::move(row));
  }
  return table;
}

// A text on one caption line: escaped ("\n"), cut after `most` bytes.
std::string quoted(const std::string& text, size_t most) {
  const std::string line = escapeToken(text);
  return "\"" + (line.size() <= most ? line : line.substr(0, most) + "...") + "\"";
}

// One table as a figure: the normalised effect on the diverging scale the panel draws.
Figure tableFigure(const PatchResult& r, bool heads) {
  Figure f;
  f.rows = r.layers;
  f.cols = heads ? r.heads : r.clean_tokens;
  f.row_labels = r.layer_labels;
  f.col_labels = heads ? r.head_labels : r.clean_labels;
  f.row_axis = "layer";
  f.col_axis = heads ? "head" : "position (clean token)";
  f.title = std::string("Activation patching: ") + (heads ? "each head's z" : "the residual stream entering each layer") +
            " \u00b7 " + r.model;
  f.subtitle = "clean " + quoted(r.posted_clean, 60) + " \u00b7 corrupt " + quoted(r.posted_corrupt, 60) + " \u00b7 answer '" +
               r.answer.label + "' vs wrong '" + r.wrong.label + "'";
  f.value_label = "normalised";  // (patched - corrupt) / (clean - corrupt): the title's row would not fit it
  f.colormap = Colormap::Diverging;
  f.low = -r.range, f.high = r.range;
  char high[32];
  std::snprintf(high, sizeof high, "%.3g", static_cast<double>(r.range));
  f.ticks = {{-r.range, std::string("-") + high}, {0.0f, "0"}, {r.range, high}};
  FigurePanel panel;
  panel.values = heads ? r.heads_normalised : r.resid_normalised;
  for (float v : panel.values) panel.masked.push_back(std::isnan(v));  // clean = corrupt: no effect to show
  f.panels.push_back(std::move(panel));
  return f;
}

nlohmann::json sweepJson(const PatchResult& r) {
  const PatchTables& t = *r.tables;
  return {{"model", r.model},
          {"clean", r.posted_clean},
          {"corrupt", r.posted_corrupt},
          {"clean_tokens", r.clean_labels},
          {"corrupt_tokens", r.corrupt_labels},
          {"metric", "logit(answer) - logit(wrong) at the last position"},
          {"answer", r.answer.typed},
          {"answer_id", *r.answer.token.id},
          {"answer_piece", r.answer.label},
          {"wrong", r.wrong.typed},
          {"wrong_id", *r.wrong.token.id},
          {"wrong_piece", r.wrong.label},
          {"clean_metric", t.clean},
          {"corrupt_metric", t.corrupt},
          {"patch_heads", tableJson(t.heads.data.data(), r.layers, r.heads)},
          {"patch_resid", tableJson(t.resid.data.data(), r.layers, r.clean_tokens)},
          {"patch_heads_normalised", tableJson(r.heads_normalised.data(), r.layers, r.heads)},
          {"patch_resid_normalised", tableJson(r.resid_normalised.data(), r.layers, r.clean_tokens)}};
}

}  // namespace

void updatePatching(AppState& state) {
  PatchingState& p = state.feature<PatchingState>();
  // A line each tenth of a running sweep, or each half second while it advances: the state
  // log sees it move (also a sweep of thousands of runs, or one slowed by a loaded machine).
  if (p.running) {
    const double at = p.worker->progress();
    const auto now = std::chrono::steady_clock::now();
    if (at > p.logged_progress && (at >= p.logged_progress + 0.1 || now - p.logged_at >= std::chrono::milliseconds(500))) {
      p.logged_progress = at, p.logged_at = now;
      markStateChanged(state);
    }
  }
  if (p.worker)
    if (std::shared_ptr<const PatchResult> r = p.worker->poll(); r && r->job == p.job) {
      p.result = std::move(r);
      p.running = false;
      p.cancelled = p.result->cancelled;
      markStateChanged(state);
    }
  if (!tabOpen(state)) return;
  const std::optional<PatchInputs> inputs = currentInputs(state);
  if (inputs && (p.job == 0 || *inputs != p.posted)) postSweep(state, *inputs);  // a cancelled sweep waits for an edit
}

void sweepAgain(AppState& state) {
  if (const std::optional<PatchInputs> inputs = currentInputs(state)) postSweep(state, *inputs);
}

bool patchingRunning(const AppState& state) { return state.feature<PatchingState>().running; }

void cancelPatching(AppState& state) {
  PatchingState& p = state.feature<PatchingState>();
  if (!p.running) return;
  p.worker->cancel();
  markStateChanged(state);
}

void pickPatchToken(AppState& state, size_t rank, bool answer) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->predictions.empty() || rank >= v->predictions.back().top.size() || !state.compute.worker) return;
  const FolderWeights weights = state.compute.worker->loadedWeights();
  if (!weights.loaded()) return;
  (answer ? state.settings.patch_answer : state.settings.patch_wrong) =
      tokenText(*weights.model, v->predictions.back().top[rank].id);
  settingsEdited(state);
  markStateChanged(state);
}

std::string patchLengthLine(const PatchResult& r) {
  if (r.clean_tokens < 0 || r.corrupt_tokens <= 0) return "";  // an error, or nothing typed yet
  if (r.clean_tokens == r.corrupt_tokens) return std::to_string(r.corrupt_tokens) + " of " + std::to_string(r.clean_tokens) + " tokens";
  return std::to_string(r.corrupt_tokens) + " of " + std::to_string(r.clean_tokens) + " tokens: the corrupt text needs " +
         std::to_string(r.clean_tokens) + ", as many as the clean one, to be patched position by position";
}

void requestPatchingExport(AppState& state) {
  const PatchingState& p = state.feature<PatchingState>();
  if (!p.result || !p.result->tables) return;
  const PatchResult& r = *p.result;
  const std::string json = sweepJson(r).dump(1) + "\n";
  for (const bool heads : {true, false}) {
    ExportJob job;
    job.kind = heads ? "patch_heads" : "patch_resid";
    job.figure = tableFigure(r, heads);
    job.formats = {"png", "csv", "html"};
    job.base_name = (heads ? "patch_heads_L" : "patch_resid_L") + std::to_string(r.layers) + "x" +
                    std::to_string(heads ? r.heads : r.clean_tokens);
    job.json = json;
    queueExport(state.exports, std::move(job));
  }
}

void patchingToJson(const AppState& state, nlohmann::json& line) {
  const PatchingState& p = state.feature<PatchingState>();
  const Settings& s = state.settings;
  nlohmann::json j = {{"corrupt", s.patch_corrupt}, {"answer", s.patch_answer}, {"wrong", s.patch_wrong},
                      {"job", p.job},           {"running", p.running},    {"cancelled", p.cancelled},
                      {"progress", p.worker && p.running ? p.worker->progress() : -1.0}};
  nlohmann::json picks = nlohmann::json::array();  // what the A / W buttons offer: the last position's top 5
  if (const ViewModel* v = state.compute.view.get(); v && !v->predictions.empty())
    for (const TokenGuess& guess : v->predictions.back().top) picks.push_back({{"label", guess.label}, {"id", guess.id}});
  j["picks"] = std::move(picks);
  if (const PatchResult* r = p.result.get()) {
    j["result_job"] = r->job;
    j["length"] = patchLengthLine(*r);
    j["clean_tokens"] = r->clean_tokens, j["corrupt_tokens"] = r->corrupt_tokens;
    j["why_not"] = r->why_not;
    j["answer_id"] = r->answer.token.id ? nlohmann::json(*r->answer.token.id) : nlohmann::json(nullptr);
    j["wrong_id"] = r->wrong.token.id ? nlohmann::json(*r->wrong.token.id) : nlohmann::json(nullptr);
    if (r->tables) {
      j["sweep"] = sweepJson(*r);  // what the export's JSON holds
      j["layers"] = r->layers, j["heads"] = r->heads, j["range"] = r->range;
    }
  }
  line["patching"] = std::move(j);
}

}  // namespace attnscope
