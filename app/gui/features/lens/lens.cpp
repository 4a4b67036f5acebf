#include "gui/features/lens/lens.h"

#include <algorithm>

#include "gui/features/predictions/predictions.h"
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

}  // namespace

void updateLens(AppState& state) {
  const LensTable* lens = shownLens(state);
  LensCell& clicked = state.lens.clicked;
  if (clicked.valid() && (!lens || clicked.layer >= lens->layers || clicked.position >= lens->positions)) {
    clicked = {};
    markStateChanged(state);
  }
}

int64_t lensMapLayer(int64_t lens_layer) { return std::max<int64_t>(0, lens_layer - 1); }

void focusLensCell(AppState& state, LensCell cell) {
  state.lens.clicked = cell;
  ViewFocus focus = state.view.focus;
  focus.layer = lensMapLayer(cell.layer);
  setFocus(state, focus);
  pinPrediction(state, cell.position);
}

void lensToJson(const AppState& state, nlohmann::json& line) {
  line["lens"] = nullptr;
  const LensTable* lens = shownLens(state);
  if (!lens) return;
  nlohmann::json top1 = nlohmann::json::array();
  for (int64_t l = 0; l < lens->layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t t = 0; t < lens->positions; ++t) row.push_back(lens->at(l, t).front().label);
    top1.push_back(row);
  }
  const LensCell& h = state.lens.hovered;
  const LensCell& c = state.lens.clicked;
  nlohmann::json hovered = nullptr, clicked = nullptr;
  if (h.valid()) hovered = {{"layer", h.layer}, {"position", h.position}, {"top", guessesJson(lens->at(h.layer, h.position))}};
  if (c.valid()) clicked = {{"layer", c.layer}, {"position", c.position}};
  line["lens"] = {{"layers", lens->layers}, {"positions", lens->positions}, {"shown", state.lens.shown},
                  {"off_reason", lens->off_reason}, {"top1", top1}, {"hovered", hovered}, {"clicked", clicked}};
}

}  // namespace attnscope
