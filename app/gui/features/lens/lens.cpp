#include "gui/features/lens/lens.h"

#include <algorithm>

#include "gui/shell/app_state.h"

namespace attnscope {
namespace {

const LensTable* shownLens(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  return v && v->source == ViewSource::ModelRun ? &v->lens : nullptr;
}

nlohmann::json guessesJson(const std::vector<TokenGuess>& guesses) {
  nlohmann::json top = nlohmann::json::array();
  for (const TokenGuess& g : guesses) top.push_back({{"label", g.label}, {"prob", g.prob}});
  return top;
}

// A new run shown: the columns computed for the last one go; a finished block comes in.
void takeColumns(AppState& state, const LensTable* lens) {
  LensState& s = state.feature<LensState>();
  const std::shared_ptr<const LaterLens> source = lens ? lens->later : nullptr;
  if (source != s.source) {
    s.source = source;
    s.columns.clear();
    s.requested = -1;
    s.error.clear();
  }
  const std::shared_ptr<const LaterLensWorker::Done> done = s.worker ? s.worker->poll() : nullptr;
  if (!done || done->source != s.source) return;
  s.requested = -1;
  s.error = done->error;
  s.columns_ms = done->milliseconds;
  const LensColumns& c = done->block;
  for (int64_t t = 0; t < c.count; ++t) {
    std::vector<std::vector<TokenGuess>>& column = s.columns[c.first + t];
    for (int64_t l = 0; l < lens->layers; ++l) column.push_back(c.cells[l * c.count + t]);
  }
  markStateChanged(state);
}

// The clicked column first, then the table's visible columns left to right: the first one not
// known is asked for (one block at a time).
void askForShownColumns(AppState& state, const LensTable& lens) {
  LensState& s = state.feature<LensState>();
  if (!s.source || !s.shown || s.requested >= 0 || !s.error.empty()) return;
  std::vector<int64_t> wanted;
  if (s.clicked.valid()) wanted.push_back(s.clicked.position);
  for (int64_t t = s.visible_first; t < std::min(s.visible_end, lens.positions); ++t) wanted.push_back(t);
  for (int64_t t : wanted) {
    if (s.columns.count(t)) continue;
    if (!s.worker)  // one block of columns from the run's residuals
      s.worker = std::make_unique<LaterLensWorker>(
          [](const LaterLens& later, int64_t position) { return later.columns(position); },
          "out of memory while computing the logit lens");
    s.worker->post(s.source, t);
    s.requested = t / s.source->block * s.source->block;
    markStateChanged(state);
    return;
  }
}

}  // namespace

void updateLens(AppState& state) {
  const LensTable* lens = shownLens(state);
  LensCell& clicked = state.feature<LensState>().clicked;
  if (clicked.valid() && (!lens || clicked.layer >= lens->layers || clicked.position >= lens->positions)) {
    clicked = {};
    markStateChanged(state);
  }
  takeColumns(state, lens);
  if (lens && lens->later) askForShownColumns(state, *lens);
}

const std::vector<TokenGuess>* lensCell(const AppState& state, int64_t layer, int64_t position) {
  const LensTable* lens = shownLens(state);
  if (!lens || layer < 0 || layer >= lens->layers || position < 0 || position >= lens->positions) return nullptr;
  if (!lens->cells.empty()) {
    const std::vector<TokenGuess>& cell = lens->at(layer, position);
    return cell.empty() ? nullptr : &cell;  // a generation's column it did not compute
  }
  const LensState& s = state.feature<LensState>();
  const auto it = s.columns.find(position);
  return s.source == lens->later && it != s.columns.end() ? &it->second[layer] : nullptr;
}

int64_t lensMapLayer(int64_t lens_layer) { return std::max<int64_t>(0, lens_layer - 1); }

void askLens(const AppState& state, ComputeAsk& ask) {
  ask.lens = state.feature<LensState>().shown && state.settings.source == InputSource::Model;
}

void focusLensCell(AppState& state, LensCell cell) {
  state.feature<LensState>().clicked = cell;
  ViewFocus focus = state.view.focus;
  focus.layer = lensMapLayer(cell.layer);
  setFocus(state, focus);
  pinQueryRow(state, cell.position);
}

void lensToJson(const AppState& state, nlohmann::json& line) {
  line["lens"] = nullptr;
  const LensTable* lens = shownLens(state);
  if (!lens) return;
  nlohmann::json top1 = nlohmann::json::array();
  int64_t known = 0;
  for (int64_t l = 0; l < lens->layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t t = 0; t < lens->positions; ++t) {
      const std::vector<TokenGuess>* cell = lensCell(state, l, t);
      row.push_back(cell ? nlohmann::json(cell->front().label) : nlohmann::json());
      known += l == 0 && cell;
    }
    top1.push_back(row);
  }
  const LensCell& h = state.feature<LensState>().hovered;
  const LensCell& c = state.feature<LensState>().clicked;
  nlohmann::json hovered = nullptr, clicked = nullptr;
  if (h.valid()) {
    const std::vector<TokenGuess>* cell = lensCell(state, h.layer, h.position);
    hovered = {{"layer", h.layer}, {"position", h.position}, {"top", cell ? guessesJson(*cell) : nlohmann::json()}};
  }
  if (c.valid()) clicked = {{"layer", c.layer}, {"position", c.position}};
  line["lens"] = {{"layers", lens->layers}, {"positions", lens->positions}, {"shown", state.feature<LensState>().shown},
                  {"enlarged", state.feature<LensState>().enlarged}, {"off_reason", lens->off_reason}, {"top1", top1}, {"hovered", hovered}, {"clicked", clicked},
                  {"on_demand", lens->later != nullptr}, {"columns_known", known}, {"columns_ms", state.feature<LensState>().columns_ms}};
}

}  // namespace attnscope
