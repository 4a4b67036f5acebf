#include "gui/features/compare/compare.h"

#include "gui/shell/app_state.h"

#include <glad/gl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/drift.h"
#include "gui/jobs/export_jobs.h"
#include "gui/render/gl_resources.h"

namespace attnscope {
namespace {

// The mistakes lab's correct run when it has this run's sizes.
const ViewModel* comparableCorrectView(const AppState& state) {
  const ViewModel* shown = shownView(state);
  const ViewModel* correct = state.compute.correctView().get();
  if (!shown || !correct || correct == shown) return nullptr;
  const bool same = correct->layers == shown->layers && correct->B == shown->B && correct->H == shown->H &&
                    correct->L == shown->L && correct->S == shown->S;
  return same ? correct : nullptr;
}

// The settings B's `with` asks for: the shown settings under that mistake instead.
Settings variantSettings(const AppState& state, Mistake with) {
  Settings settings = state.settings;
  settings.mistake = with;
  return settings;
}

// The shown model's settings on B's other file.
Settings otherFileSettings(const AppState& state) {
  Settings settings = state.settings;
  settings.model = state.feature<CompareState>().other.path;
  return settings;
}

// What the variant worker runs for B: the settings under B's mistake, or on B's other file.
std::optional<Settings> wantedVariant(const AppState& state) {
  const MapPick& b = state.view.compare.b;
  if (b.other_file && otherFilePossible(state) && !state.feature<CompareState>().other.path.empty())
    return otherFileSettings(state);
  if (b.with != Mistake::None && settingsVariantsPossible(state)) return variantSettings(state, b.with);
  return std::nullopt;
}

bool sameSizes(const ViewModel& a, const ViewModel& b) {
  return a.layers == b.layers && a.B == b.B && a.H == b.H && a.L == b.L && a.S == b.S;
}

// Why the other file's run cannot be compared with this one ("" when it can): its shape or its tokens.
std::string otherFileMismatch(const ViewModel& shown, const ViewModel& other, const std::string& path) {
  if (!sameSizes(shown, other))
    return path + " is not a file of this model: " + std::to_string(other.layers) + " layers x " + std::to_string(other.H) +
           " heads on " + std::to_string(other.L) + " tokens, this model " + std::to_string(shown.layers) + " x " +
           std::to_string(shown.H) + " on " + std::to_string(shown.L);
  for (size_t b = 0; b < shown.query_pieces.size() && b < other.query_pieces.size(); ++b)
    for (size_t t = 0; t < shown.query_pieces[b].size() && t < other.query_pieces[b].size(); ++t)
      if (shown.query_pieces[b][t].id != other.query_pieces[b][t].id)
        return path + " tokenizes the text differently (position " + std::to_string(t) + ": id " +
               std::to_string(other.query_pieces[b][t].id) + ", this model " + std::to_string(shown.query_pieces[b][t].id) + ")";
  return "";
}

// Takes the variant worker's result; posts B's variant when its settings changed.
void updateVariantRun(AppState& state) {
  SettingsVariantRun& v = state.feature<CompareState>().variant;
  if (v.worker) {
    if (std::shared_ptr<const ComputeResult> result = v.worker->poll()) {
      v.result = std::move(result);
      markStateChanged(state);
    }
  }
  const std::optional<Settings> variant = wantedVariant(state);
  if (!variant || state.view.tab != FocusTab::Compare) return;
  const Settings& wanted = *variant;
  if (v.posted_generation != 0 && !computeSettingsDiffer(wanted, v.posted)) return;
  if (!v.worker) v.worker = std::make_unique<ComputeWorker>();
  v.posted = wanted;
  v.posted_generation = v.worker->post(wanted);
  markStateChanged(state);
}

// Why a pick has no view model ("" when it has one).
std::string missingPickReason(const AppState& state, const MapPick& pick) {
  if (pick.with == Mistake::None && !pick.other_file)
    return "no correct run to compare with: choose a teaching mistake in the mistakes lab";
  const SettingsVariantRun& v = state.feature<CompareState>().variant;
  const std::string& path = state.feature<CompareState>().other.path;
  const std::string name = pick.other_file ? "B on " + path : std::string("B with ") + mistakeName(pick.with);
  if (v.pending()) return "computing " + name + " ...";
  if (!v.error().empty()) return name + " does not compute: " + v.error();
  const ViewModel* shown = shownView(state);
  if (pick.other_file && shown && v.view()) return otherFileMismatch(*shown, *v.view(), path);
  return name + ": its maps have other sizes than this run's";
}

// Every head's drift against the other file (analysis/drift.h), when either run or the batch item changed.
void updateDrift(AppState& state, const ViewModel& shown, int64_t b) {
  CompareState& c = state.feature<CompareState>();
  OtherFile& o = c.other;
  const uint64_t generation = state.compute.traceGeneration();
  const ViewModel* other = state.view.compare.b.other_file ? pickedView(state, state.view.compare.b) : nullptr;
  if (!other) {
    o.max_abs = o.js = Tensor{};
    o.generation = o.variant_generation = 0;
    return;
  }
  if (o.generation == generation && o.variant_generation == c.variant.generation() && o.batch_item == b) return;
  o.generation = generation, o.variant_generation = c.variant.generation(), o.batch_item = b;
  AttentionDrift drift(shown.layers, shown.H);
  for (int64_t l = 0; l < shown.layers; ++l)
    for (int64_t h = 0; h < shown.H; ++h) drift.add(l, h, shown.probs(l, b, h), other->probs(l, b, h), shown.L, shown.S);
  o.max_abs = drift.maxAbs();
  o.js = drift.js();
  markStateChanged(state);
}

MapPick clampPick(MapPick pick, const ViewModel& view) {
  pick.layer = std::clamp<int64_t>(pick.layer, 0, view.layers - 1);
  pick.head = std::clamp<int64_t>(pick.head, 0, view.H - 1);
  return pick;
}

// Defaults (until the user picks): the mistakes lab compares the focused head with and without the mistake;
// otherwise the focused head with the next one (or the next layer's, with one head).
void choosePicks(AppState& state, const ViewModel& view) {
  CompareView& c = state.view.compare;
  const ViewFocus& f = state.view.focus;
  // Picks of the correct run (restored from view.json, or kept after the mistake was
  // switched off) without one, or of a settings variant where none can run: the defaults.
  if ((c.a.correct_run || c.b.correct_run) && !comparableCorrectView(state)) c.chosen = false;
  if ((c.a.with != Mistake::None || c.b.with != Mistake::None) && !settingsVariantsPossible(state)) c.chosen = false;
  if ((c.a.other_file || c.b.other_file) && !otherFilePossible(state)) c.chosen = false;
  if (!c.chosen) {
    c.a = {f.layer, f.head, false};
    if (comparableCorrectView(state)) c.b = {f.layer, f.head, true};
    else if (view.H > 1) c.b = {f.layer, (f.head + 1) % view.H, false};
    else c.b = {(f.layer + 1) % view.layers, f.head, false};
  }
  c.a = clampPick(c.a, view);
  c.b = clampPick(c.b, view);
}

void replaceDiffTexture(GpuState& gpu, const PooledMap* map) {
  if (gpu.compare_diff) glDeleteTextures(1, &gpu.compare_diff);
  gpu.compare_diff = map ? uploadFloatTexture(map->values.data(), map->rows, map->cols) : 0;
  ++gpu.texture_generation;
}

}  // namespace

std::string pickName(const ViewModel& view, const MapPick& pick) {
  std::string name = view.layers > 1 ? view.maps[pick.layer].name + ", " : "";
  name += "head " + std::to_string(pick.head);
  if (pick.correct_run) name += " (correct run)";
  if (pick.with != Mistake::None) name += std::string(" (with ") + mistakeName(pick.with) + ")";
  if (pick.other_file) name += " (other file)";
  return name;
}

bool otherFilePossible(const AppState& state) {
  return state.settings.source == InputSource::Model && shownView(state) && shownView(state)->source == ViewSource::ModelRun;
}

void compareWithOtherFile(AppState& state, const std::string& path) {
  CompareState& c = state.feature<CompareState>();
  c.other.path = path;
  const ViewFocus& f = state.view.focus;
  state.view.compare = {{f.layer, f.head}, {f.layer, f.head, false, Mistake::None, true}, true};
  c.generation = 0;  // compared again once B's run arrives
  markStateChanged(state);
}

bool settingsVariantsPossible(const AppState& state) {
  return state.settings.source != InputSource::Model && !state.compute.imported() && shownView(state) &&
         shownView(state)->source == ViewSource::CoreTrace;
}

const ViewModel* pickedView(const AppState& state, const MapPick& pick) {
  if (pick.with == Mistake::None && !pick.other_file) return pick.correct_run ? comparableCorrectView(state) : shownView(state);
  const SettingsVariantRun& v = state.feature<CompareState>().variant;
  const ViewModel* shown = shownView(state);
  const ViewModel* variant = v.view();
  if (!shown || !variant || v.pending()) return nullptr;
  if (pick.other_file) {
    const std::string& path = state.feature<CompareState>().other.path;
    if (path.empty() || computeSettingsDiffer(v.posted, otherFileSettings(state))) return nullptr;
    return otherFileMismatch(*shown, *variant, path).empty() ? variant : nullptr;
  }
  if (v.posted.mistake != pick.with || computeSettingsDiffer(v.posted, variantSettings(state, pick.with))) return nullptr;
  return sameSizes(*variant, *shown) ? variant : nullptr;
}

unsigned int pickedTexture(const AppState& state, const MapPick& pick) {
  const ViewTextures& tex = pick.with != Mistake::None || pick.other_file ? state.gpu.variant_textures
                            : pick.correct_run         ? state.gpu.correct_textures
                                                       : state.gpu.textures;
  if (!tex.builtFrom(pickedView(state, pick))) return 0;
  const size_t index = tex.index(pick.layer, pick.head);
  return index < tex.probs.size() ? tex.probs[index] : 0;
}

void updateComparison(AppState& state) {
  // The second run's textures first (a run taken below is uploaded next frame).
  if (updateViewTextures(state.gpu.variant_textures, state.feature<CompareState>().variant.view(), state.view.focus.batch_item))
    ++state.gpu.texture_generation;
  updateVariantRun(state);
  const ViewModel* view = shownView(state);
  if (state.view.tab != FocusTab::Compare || !view) return;
  choosePicks(state, *view);
  CompareState& c = state.feature<CompareState>();
  const CompareView& picks = state.view.compare;
  const int64_t b = std::clamp<int64_t>(state.view.focus.batch_item, 0, view->B - 1);
  updateDrift(state, *view, b);
  const uint64_t generation = state.compute.traceGeneration();
  if (c.generation == generation && c.batch_item == b && c.a == picks.a && c.b == picks.b &&
      c.variant_generation == c.variant.generation())
    return;
  c.generation = generation, c.batch_item = b, c.a = picks.a, c.b = picks.b;
  c.variant_generation = c.variant.generation();
  c.error.clear();
  c.comparison = MapComparison{};
  markStateChanged(state);
  const ViewModel* va = pickedView(state, picks.a);
  const ViewModel* vb = pickedView(state, picks.b);
  if (!va || !vb) {
    c.error = missingPickReason(state, va ? picks.b : picks.a);
    replaceDiffTexture(state.gpu, nullptr);
    return;
  }
  const float* a = va->probs(picks.a.layer, b, picks.a.head);  // [L, S]
  const float* bb = vb->probs(picks.b.layer, b, picks.b.head);
  c.comparison = compareMaps(a, bb, view->L, view->S);
  // Cells masked in both maps are drawn masked (hatched); in either one they are compared.
  const uint8_t* mask_a = va->allowed(picks.a.layer, b);
  const uint8_t* mask_b = vb->allowed(picks.b.layer, b);
  std::vector<uint8_t> shown_cells;
  if (mask_a && mask_b) {
    shown_cells.resize(static_cast<size_t>(view->L * view->S));
    for (size_t cell = 0; cell < shown_cells.size(); ++cell) shown_cells[cell] = mask_a[cell] || mask_b[cell];
  }
  const PooledMap texture = textureOfMap(c.comparison.difference.data.data(), shown_cells.empty() ? nullptr : shown_cells.data(),
                                         view->L, view->S, MapKind::Scores);
  replaceDiffTexture(state.gpu, &texture);
}

namespace {

// {path, measure, drift [layers][H] of the measure shown, max_abs_max, js_max}.
nlohmann::json otherFileJson(const OtherFile& other) {
  const Tensor& drift = other.show_js ? other.js : other.max_abs;
  nlohmann::json table = nlohmann::json::array();
  for (int64_t l = 0; !drift.empty() && l < drift.dim(0); ++l)
    table.push_back(std::vector<float>(drift.data.begin() + l * drift.dim(1), drift.data.begin() + (l + 1) * drift.dim(1)));
  const auto tableMax = [](const Tensor& t) { return t.empty() ? 0.0f : *std::max_element(t.data.begin(), t.data.end()); };
  return {{"path", other.path}, {"measure", other.show_js ? "js" : "max_abs"}, {"drift", table},
          {"max_abs_max", tableMax(other.max_abs)}, {"js_max", tableMax(other.js)}};
}

}  // namespace

void compareToJson(const AppState& state, nlohmann::json& line) {
  line["compare"] = nullptr;  // the compare view's picks and A - B, while its tab is open
  if (state.view.tab != FocusTab::Compare || state.feature<CompareState>().generation == 0) return;
  const CompareState& cmp = state.feature<CompareState>();
  nlohmann::json largest = nlohmann::json::array();
  for (const MapCell& cell : cmp.comparison.largest) largest.push_back({cell.row, cell.col, cell.a, cell.b, cell.diff});
  const SettingsVariantRun& variant = cmp.variant;
  line["compare_variant"] = {{"mistake", mistakeName(variant.posted.mistake)}, {"posted", variant.posted_generation},
                             {"pending", variant.pending()}, {"error", variant.error()}};
  line["compare_other"] = otherFileJson(cmp.other);
  line["compare"] = {{"a", pickJson(cmp.a)}, {"b", pickJson(cmp.b)}, {"batch_item", cmp.batch_item}, {"error", cmp.error},
                     {"abs_max", cmp.comparison.abs_max}, {"largest", largest}};
}

void requestDifferenceExport(AppState& state) {
  const CompareState& c = state.feature<CompareState>();
  const ViewModel* view = shownView(state);
  const ViewModel* va = view ? pickedView(state, c.a) : nullptr;
  const ViewModel* vb = view ? pickedView(state, c.b) : nullptr;
  if (!va || !vb || c.comparison.difference.empty()) return;
  const int64_t b = c.batch_item, L = view->L, S = view->S;
  Figure figure;
  figure.rows = L;
  figure.cols = S;
  figure.row_labels = view->query_tokens[b];
  figure.col_labels = view->key_tokens[b];
  figure.title = "A - B: " + pickName(*view, c.a) + " minus " + pickName(*view, c.b) +
                 (view->model.empty() ? "" : " \u00b7 " + view->model);
  figure.subtitle = "batch item " + std::to_string(b) + " \u00b7 L " + std::to_string(L) + " \u00d7 S " + std::to_string(S);
  figure.value_label = "probability difference";
  figure.colormap = Colormap::Diverging;
  const float abs_max = c.comparison.abs_max > 0 ? c.comparison.abs_max : 1.0f;
  figure.low = -abs_max, figure.high = abs_max;
  FigurePanel panel;
  panel.values.assign(c.comparison.difference.data.begin(), c.comparison.difference.data.end());
  // Cells masked in both maps are hatched, as on screen.
  const uint8_t* mask_a = va->allowed(c.a.layer, b);
  const uint8_t* mask_b = vb->allowed(c.b.layer, b);
  if (mask_a && mask_b)
    for (int64_t cell = 0; cell < L * S; ++cell) panel.masked.push_back(!mask_a[cell] && !mask_b[cell]);
  figure.panels.push_back(std::move(panel));
  // L0H1, L0H1c (the correct run), L0H1+no-scaling (a settings variant).
  const auto pickPart = [](const MapPick& p) {
    return "L" + std::to_string(p.layer) + "H" + std::to_string(p.head) + (p.correct_run ? "c" : "") +
           (p.with != Mistake::None ? std::string("+") + mistakeName(p.with) : "") + (p.other_file ? "+other" : "");
  };
  ExportJob job;
  job.kind = "difference";
  job.figure = std::move(figure);
  job.base_name = "difference_" + pickPart(c.a) + "-" + pickPart(c.b) + "_b" + std::to_string(b) + "_L" +
                  std::to_string(L) + "xS" + std::to_string(S);
  job.json = nlohmann::json{{"a", pickJson(c.a)}, {"b", pickJson(c.b)}, {"batch_item", b},
                            {"abs_max", c.comparison.abs_max}, {"settings", exportSettingsJson(state.settings, state.view.focus, *view)}}
                 .dump(2) + "\n";
  queueExport(state.exports, std::move(job));
}

}  // namespace attnscope
