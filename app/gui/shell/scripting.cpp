#include "gui/shell/scripting.h"

#include <glad/gl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "gui/features/compare/compare_sync.h"
#include "gui/features/exports/export_jobs.h"
#include "gui/features/layer_maps/layer_maps_sync.h"
#include "gui/shell/panels.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

void writeStateLog(AppState& state, int width, int height) {
  nlohmann::json line;
  const Settings& s = state.settings;
  const ComputeState& c = state.compute;
  const ExportState& e = state.exports;
  const ViewTextures& tex = state.gpu.textures;
  const ViewModel* v = c.view.get();
  line["generation"] = c.trace_generation;
  line["pending"] = c.pending();
  line["error"] = c.error;
  line["notice"] = state.ui.notice;
  line["maps_stale"] = c.mapsStale();
  line["source"] = inputSourceName(s.source);
  line["settings_heads"] = s.heads;
  line["settings_L"] = s.synthetic_L;  // synthetic source
  line["mask"] = s.mask.toString();
  line["focused_layer"] = state.view.focus.layer;
  line["focused_head"] = state.view.focus.head;
  line["batch_item"] = tex.batch_item;
  line["colormap"] = colormapName(s.prob_colormap);
  line["log_scale"] = s.log_scale;
  line["folded_layout"] = s.folded_layout;
  line["mistake"] = mistakeName(s.mistake);
  line["busy"] = c.busy;
  line["progress"] = c.progress;    // a tiled overview in progress: fraction done; -1 otherwise
  line["cancelled"] = c.cancelled;  // the latest job was cancelled (the maps are the previous result's)
  line["compute_runs"] = c.runs;
  line["projections_reused"] = c.projections_reused;
  line["raw_scores_reused"] = c.raw_scores_reused;
  line["compute_ms"] = c.compute_ms;
  line["item_active"] = state.ui.item_active;
  line["help_open"] = state.ui.show_help;
  line["modal_open"] = state.ui.bundle_modal_open;
  line["open_error"] = state.ui.bundle_error;  // the open dialog's message
  line["selected_view"] = mapKindName(e.selected);
  // Rollout and flow: built kinds of the shown view, a build in flight, why a kind is greyed out.
  nlohmann::json built = nlohmann::json::array(), unavailable = nlohmann::json::object();
  if (v)
    for (const auto& maps : v->across_layers) built.push_back(mapKindName(maps->kind));
  for (const MapKindInfo& info : mapKinds())
    if (const std::string why = layerMapsUnavailable(state, info.kind); !why.empty()) unavailable[info.name] = why;
  const LayerMapsState& lm = state.layer_maps;
  line["layer_maps"] = {{"built", built},
                        {"building", lm.running.valid() ? nlohmann::json(mapKindName(lm.kind)) : nlohmann::json(nullptr)},
                        {"error", lm.error},
                        {"unavailable", unavailable}};
  line["export_dir"] = exportFolder(s);
  line["exporting"] = exportBusy(e);
  line["export_count"] = e.count;
  line["last_export"] = nullptr;
  if (e.last) line["last_export"] = {{"kind", e.last->kind}, {"paths", e.last->paths}, {"error", e.last->error}};
  line["toast"] = nullptr;
  if (e.toast) line["toast"] = {{"text", e.toast->text}, {"error", e.toast->error}};
  if (v) {
    line["view_source"] = viewSourceName(v->source);
    line["layers"] = v->layers;
    line["heads"] = v->H;
    line["B"] = v->B;
    line["L"] = v->L;
    line["S"] = v->S;
    line["warnings"] = v->warnings;
  }
  if (s.source == InputSource::Model) {
    line["model"] = s.model;
    line["model_text"] = s.model_text;
  }
  line["models_listed"] = nlohmann::json::array();
  for (const ShippedModel& m : state.ui.shipped_models) line["models_listed"].push_back(m.name);
  line["predictions"] = nullptr;  // the predictions panel: position, the 5 guesses, the actual next
  if (const PredictionPosition at = predictionPosition(state); at.position >= 0 && showsPredictions(state)) {
    const NextTokenPredictions& p = v->predictions[at.position];
    nlohmann::json top = nlohmann::json::array();
    for (const TokenGuess& guess : p.top) top.push_back({{"label", guess.label}, {"prob", guess.prob}});
    line["predictions"] = {{"position", at.position}, {"why", at.why}, {"top", top}, {"actual", p.actual},
                           {"actual_prob", p.actual_prob}, {"actual_is_top", p.actual_is_top}};
  }
  if (v && v->source == ViewSource::ModelRun) {
    line["query_tokens"] = v->query_tokens[0];
    line["model_name"] = v->model;
    line["caption"] = v->notes;
    line["unknown_tokens"] = v->unknown_tokens;
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
  if (tex.hasMask()) {  // the focused layer's mask
    const size_t layer = static_cast<size_t>(std::min(state.view.focus.layer, tex.layers - 1));
    line["allowed_cells"] = tex.allowed_cells[layer];
    line["fully_masked_rows"] = tex.fully_masked_rows[layer];
  }
  line["grid_columns"] = state.view.grid_columns;
  line["head_table"] = nullptr;  // the metrics table of the focused batch item, in table order
  if (const HeadTable* table = shownHeadTable(state)) {
    const HeadTableView& t = state.view.table;
    nlohmann::json order = nlohmann::json::array(), groups = nlohmann::json::array(), values = nlohmann::json::array();
    for (int64_t n : t.order) {
      order.push_back({n / table->H, n % table->H});
      groups.push_back(table->group(n, state.view.focus.batch_item));
      const HeadMetrics& m = table->row(n / table->H, n % table->H, state.view.focus.batch_item);
      nlohmann::json row = nlohmann::json::object();  // the numbers the table draws (null: "-")
      for (const MetricInfo& info : headMetricInfos())
        row[info.name] = std::isnan(m.*info.field) ? nlohmann::json() : nlohmann::json(m.*info.field);
      values.push_back(row);
    }
    line["head_table"] = {{"sort_column", headColumnName(t.sort.column)}, {"descending", t.sort.descending},
                          {"order_grid", t.order_grid}, {"order", order}, {"groups", groups}, {"values", values}};
  }
  line["focus_tab"] = focusTabName(state.view.tab);
  line["compare"] = nullptr;  // the compare view's picks and A - B, while its tab is open
  if (state.view.tab == FocusTab::Compare && state.compare.generation > 0) {
    const CompareState& cmp = state.compare;
    nlohmann::json largest = nlohmann::json::array();
    for (const MapCell& cell : cmp.comparison.largest) largest.push_back({cell.row, cell.col, cell.a, cell.b, cell.diff});
    const SettingsVariantRun& variant = cmp.variant;
    line["compare_variant"] = {{"mistake", mistakeName(variant.posted.mistake)}, {"posted", variant.posted_generation},
                               {"pending", variant.pending()}, {"error", variant.error}};
    line["compare"] = {{"a", pickJson(cmp.a)}, {"b", pickJson(cmp.b)}, {"batch_item", cmp.batch_item}, {"error", cmp.error},
                       {"abs_max", cmp.comparison.abs_max}, {"largest", largest}};
  }
  line["query_focus"] = nullptr;  // chosen queries; bars [layers][H][S] when small
  if (state.view.tab == FocusTab::QueryFocus && state.query_focus.generation > 0) {
    const QueryFocusState& q = state.query_focus;
    nlohmann::json bars = nullptr;
    if (!q.bars.empty() && q.bars.data.size() <= 4096) {
      bars = nlohmann::json::array();
      for (int64_t l = 0; l < q.bars.dim(0); ++l) {
        nlohmann::json heads = nlohmann::json::array();
        for (int64_t h = 0; h < q.bars.dim(1); ++h) {
          const float* row = q.bars.data.data() + (l * q.bars.dim(1) + h) * q.bars.dim(2);
          heads.push_back(std::vector<float>(row, row + q.bars.dim(2)));
        }
        bars.push_back(heads);
      }
    }
    line["query_focus"] = {{"queries", q.choice.queries}, {"combine", q.choice.combine == RowCombine::Mean ? "mean" : "sum"},
                           {"batch_item", q.batch_item}, {"bars", bars}};
  }
  line["correct_trace"] = c.correct_view != nullptr;
  line["diff_max"] = nullptr;  // focused head, batch item: max |buggy - correct| probability
  if (const float diff = focusedDiffMax(state); diff >= 0.0f) line["diff_max"] = diff;
  line["diff_summary"] = mistakeDiffSummary(state);
  line["stepper"] = nullptr;
  if (state.stepper.open) {
    nlohmann::json stepper = {{"step", state.stepper.step}, {"playing", state.stepper.playing},
                              {"error", c.decode_error}};
    if (const KvCacheRun* run = c.decode.get()) {
      const DecodeStep& step = run->steps[std::clamp<int64_t>(state.stepper.step, 0, run->L - 1)];
      const int64_t entries = static_cast<int64_t>(step.cached.size());
      stepper.update({{"L", run->L}, {"B", run->B}, {"d", run->d}, {"G", run->G}, {"sinks", run->sinks},
                      {"window", run->window}, {"capacity", run->capacity}, {"entries", entries},
                      {"entries_after", step.entries_after}, {"bytes_per_group", run->bytesPerGroup(entries)},
                      {"bytes_per_layer", run->bytesPerLayer(entries)}, {"cached", step.cached},
                      {"evicted", step.evicted}});
      if (step.position < static_cast<int64_t>(c.decode_row_diff.size()))
        stepper["row_diff"] = c.decode_row_diff[step.position];
    }
    line["stepper"] = stepper;
  }
  line["hover"] = {state.view.hover.row, state.view.hover.col};
  // The focused map's numbers at the hovered cell, from the view model the tooltip reads.
  line["hover_prob"] = nullptr;
  line["hover_score"] = nullptr;
  const ViewFocus& f = state.view.focus;
  if (const ViewModel* shown = shownView(state);
      shown && state.view.hover.valid() && state.view.hover.row < shown->L && state.view.hover.col < shown->S &&
      f.layer < shown->layers && tex.batch_item < shown->B && f.head < shown->H && tex.batch_item >= 0) {
    const int64_t cell = state.view.hover.row * shown->S + state.view.hover.col;
    line["hover_prob"] = shown->probs(f.layer, tex.batch_item, f.head)[cell];
    if (const float* scores = shown->scores(f.layer, tex.batch_item, f.head)) {
      if (shown->isAllowed(f.layer, tex.batch_item, state.view.hover.row, state.view.hover.col))
        line["hover_score"] = scores[cell];
    }
  }
  // A tiled source: the real map, its overview, the zoomed window's tile and the exact values
  // at the hovered real cell (when that tile has them).
  line["tiled"] = nullptr;
  if (v && v->tiled) {
    const TiledMaps& m = *v->tiled;
    line["tiled"] = {{"L", m.L}, {"S", m.S}, {"rows", m.rows}, {"cols", m.cols}, {"note", state.script.focus_note}};
  }
  line["zoom_tile"] = nullptr;
  if (const std::shared_ptr<const WindowTile>& tile = state.zoom_tile.tile) {
    const CellWindow& w = tile->request.window;
    line["zoom_tile"] = {{"b", tile->request.b}, {"h", tile->request.h}, {"window", {w.row0, w.rows, w.col0, w.cols}},
                         {"exact", tile->exact}, {"ms", tile->milliseconds}, {"error", tile->error},
                         {"pending", state.zoom_tile.pending()}};
  }
  line["map_hover"] = {state.view.map_hover.row, state.view.map_hover.col};
  line["hover_exact"] = nullptr;
  float exact_prob = 0.0f, exact_score = 0.0f;
  bool exact_allowed = false;
  if (const WindowTile* tile = state.zoom_tile.ready();
      tile && state.view.map_hover.valid() &&
      tile->exactCell(state.view.map_hover.row, state.view.map_hover.col, &exact_prob, &exact_score, &exact_allowed)) {
    line["hover_exact"] = {{"prob", exact_prob}, {"score", exact_allowed ? nlohmann::json(exact_score) : nlohmann::json()},
                           {"allowed", exact_allowed}};
  }
  // The focus view's visible window [row0, rows, col0, cols] and the labels drawn on its axes.
  const CellWindow zoom = v ? resolveWindow(state.view.zoom, v->mapL(), v->mapS()) : CellWindow{};
  line["zoom_window"] = {zoom.row0, zoom.rows, zoom.col0, zoom.cols};
  line["zoomed"] = !state.view.zoom.whole();
  const FocusAxisDrawn& axis = state.script.focus_axis;
  line["focus_axis"] = {{"rows", {axis.first_row, axis.last_row}}, {"cols", {axis.first_col, axis.last_col}}};
  line["zoom_textures_built"] = state.gpu.zoom.rebuilds;
  line["partial_redraws"] = state.gpu.redraw.partial_frames;  // frames drawn on the kept pixels
  line["window"] = {width, height};
  nlohmann::json rects = nlohmann::json::object();
  for (const auto& [name, r] : state.script.layout) rects[name] = {r.x, r.y, r.w, r.h};
  line["rects"] = rects;
  const std::string text = line.dump();
  if (text == state.script.last_line) return;
  state.script.last_line = text;
  std::fprintf(state.script.state_log, "%s\n", text.c_str());
  std::fflush(state.script.state_log);
}

}  // namespace

std::string openStateLog(const std::string& path, AppState& state) {
  if (path.empty()) return "";
  state.script.state_log = std::fopen(path.c_str(), "a");
  if (!state.script.state_log) return "--state-log " + path + ": cannot open (" + std::strerror(errno) + ")";
  return "";
}

void writeStateLogIfPending(AppState& state, int width, int height) {
  if (!state.script.state_log || !state.script.pending) return;
  state.script.pending = false;
  writeStateLog(state, width, height);
}

void closeStateLog(AppState& state, int width, int height) {
  if (!state.script.state_log) return;
  writeStateLog(state, width, height);
  std::fclose(state.script.state_log);
  state.script.state_log = nullptr;
}

RgbImage readWindowPixels(int width, int height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  std::vector<Rgb> bottom_up(static_cast<size_t>(width) * height);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, bottom_up.data());
  image.pixels.resize(bottom_up.size());
  for (int y = 0; y < height; ++y) {
    std::copy_n(&bottom_up[static_cast<size_t>(height - 1 - y) * width], width,
                &image.pixels[static_cast<size_t>(y) * width]);
  }
  return image;
}

bool writeScreenshot(const std::string& path, int width, int height) {
  try {
    writeFileAtomic(path, encodePng(readWindowPixels(width, height)));
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace attnscope
