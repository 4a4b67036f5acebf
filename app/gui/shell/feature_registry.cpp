// The feature registry: one row per feature, run through by the shell (shell/app.cpp,
// shell/scripting.cpp). The rows are in frame order: the update steps, the panels and the
// overlays each run top to bottom (dragged panel borders first: they move the panels this
// frame; the metrics table before the grid: a sort or a row click shows in the grid the same
// frame). The shell's own windows (status bar, help, toast, notice) are rows too, for that order.
#include "gui/shell/feature_registry.h"

#include <cstring>

#include "gui/features/compare/compare.h"
#include "gui/features/controls/controls.h"
#include "gui/features/focus/focus.h"
#include "gui/features/focus/layer_maps.h"
#include "gui/features/generate/generate.h"
#include "gui/features/head_grid/head_grid.h"
#include "gui/features/head_grid/overview.h"
#include "gui/features/induction_probe/induction_probe.h"
#include "gui/features/interventions/interventions.h"
#include "gui/features/lens/lens.h"
#include "gui/features/mask/mask.h"
#include "gui/features/metrics/metrics.h"
#include "gui/features/open/open_dialog.h"
#include "gui/features/panel_borders/panel_borders.h"
#include "gui/features/patching/patching.h"
#include "gui/features/pipeline/pipeline.h"
#include "gui/features/predictions/predictions.h"
#include "gui/features/query_focus/query_focus.h"
#include "gui/features/stepper/stepper.h"

namespace attnscope {
namespace {

// What the shell calls for one feature; a null hook is a step the feature does not have.
struct Feature {
  const char* name;
  void (*update_shown)(AppState&);             // changes the result the views show
  void (*update)(AppState&);                   // follows the shown result and the user's choices
  void (*follow_result)(AppState&);            // a new result is shown
  void (*ask)(const AppState&, ComputeAsk&);   // what the next compute job should bring
  bool (*busy)(const AppState&);               // work of its own in flight
  // Its keys: true when it took the press (shell/shortcuts.cpp: Ctrl+S even while typing,
  // Escape when no overlay took it, the rest while no text box has the keyboard).
  bool (*key)(AppState&, const KeyPress&);
  void (*draw)(AppState&);                     // its window, or its part of part_of's panel
  const char* part_of;                         // a panel's row name: drawn by that panel (a tab, a section)
  void (*to_json)(const AppState&, nlohmann::json&);  // its state-log keys
  void (*finish)(AppState&);                   // at shutdown
  PanelPlace place;                            // a panel's default place (shell/panels.h)
};

// clang-format off
constexpr Feature kFeatures[] = {
//  name             update_shown      update              follow_result        ask           busy                     key             draw                  part_of        to_json              finish            place
  {"generate",       updateGeneration, nullptr,            nullptr,             nullptr,      generationRunning,       generateKey,    drawGenerateSection,  "controls",    generateToJson,      finishGeneration, {}},
  {"induction_probe", nullptr,        nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawInductionProbeSection, "controls", inductionProbeToJson, nullptr,       {}},
  {"layer_maps",     updateLayerMaps,  nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        nullptr,              nullptr,       layerMapsToJson,     finishLayerMaps,  {}},
  {"panel_borders",  nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        updatePanelBorders,   nullptr,       panelBordersToJson,  nullptr,          {}},
  {"controls",       nullptr,          nullptr,            nullptr,             askControls,  nullptr,                 nullptr,        drawControlPanel,     nullptr,       controlsToJson,      nullptr,          {Column::Left, 0}},
  {"metrics",        nullptr,          updateHeadOrder,    nullptr,             nullptr,      nullptr,                 nullptr,        drawMetricsPanel,     nullptr,       headTableToJson,     nullptr,          {Column::Centre, 0, nullptr, metricsWidth}},
  {"head_grid",      nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawHeadGridPanel,    nullptr,       headGridToJson,      nullptr,          {Column::Centre, 0}},
  {"head_scroll",    nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        nullptr,              nullptr,       headScrollToJson,    nullptr,          {}},
  {"overview",       nullptr,          updateOverview,     nullptr,             nullptr,      ablationSweepRunning,    nullptr,        nullptr,              nullptr,       overviewToJson,      nullptr,          {}},
  {"focus",          nullptr,          updateZoomView,     followResultInFocus, nullptr,      zoomTilePending,         nullptr,        drawFocusPanel,       nullptr,       focusToJson,         nullptr,          {Column::Centre, 10, focusHeight}},
  {"compare",        nullptr,          updateComparison,   nullptr,             nullptr,      nullptr,                 nullptr,        drawComparePanel,     "focus",       compareToJson,       nullptr,          {}},
  {"query_focus",    nullptr,          updateQueryFocus,   nullptr,             nullptr,      nullptr,                 nullptr,        drawQueryFocusPanel,  "focus",       queryFocusToJson,    nullptr,          {}},
  {"interventions",  nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawInterventionsPanel, "focus",     interventionsToJson, nullptr,          {}},
  {"patching",       nullptr,          updatePatching,     nullptr,             nullptr,      patchingRunning,         nullptr,        drawPatchingPanel,    "focus",       patchingToJson,      nullptr,          {}},
  {"predictions",    nullptr,          updatePredictions,  nullptr,             askLogitRows, laterPredictionsPending, nullptr,        drawPredictionsPanel, nullptr,       predictionsToJson,   nullptr,          {Column::Right, 0, predictionsHeight, nullptr, showsPredictions}},
  {"lens",           nullptr,          updateLens,         nullptr,             askLens,      nullptr,                 nullptr,        drawLensTab,          "predictions", lensToJson,          nullptr,          {}},
  {"mask",           nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawMaskPanel,        nullptr,       maskToJson,          nullptr,          {Column::Right, 10, maskHeight}},
  {"pipeline",       nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawPipelinePanel,    nullptr,       pipelineToJson,      nullptr,          {Column::Right, 30}},
  {"stepper",        nullptr,          advanceStepperPlay, clampStep,           askDecode,    stepperPlaying,          stepperKey,     drawStepperPanel,     nullptr,       stepperToJson,       nullptr,          {Column::Right, 20, stepperHeight, nullptr, stepperOpen}},
  {"status_bar",     nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawStatusBar,        nullptr,       nullptr,             nullptr,          {}},
  {"help",           nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawHelpOverlay,      nullptr,       nullptr,             nullptr,          {}},
  {"open_dialog",    nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 openDialogKey,  drawOpenDialog,       nullptr,       openDialogToJson,    nullptr,          {}},
  {"toast",          nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawToast,            nullptr,       nullptr,             nullptr,          {}},
  {"notice",         nullptr,          nullptr,            nullptr,             nullptr,      nullptr,                 nullptr,        drawNotice,           nullptr,       nullptr,             nullptr,          {}},
};
// clang-format on

// Calls hook `step` of every feature that has one, in table order.
template <typename Hook, typename... Args>
void forEach(Hook Feature::*step, Args&&... args) {
  for (const Feature& feature : kFeatures)
    if (feature.*step) (feature.*step)(args...);
}

}  // namespace

void updateShownResult(AppState& state) { forEach(&Feature::update_shown, state); }
void updateFeatures(AppState& state) { forEach(&Feature::update, state); }

void followResult(AppState& state) {
  setFocus(state, state.view.focus);  // fewer heads or batch items than before: clamp
  forEach(&Feature::follow_result, state);
}

ComputeAsk computeAsk(const AppState& state) {
  ComputeAsk ask;
  forEach(&Feature::ask, state, ask);
  return ask;
}

bool featuresBusy(const AppState& state) {
  for (const Feature& feature : kFeatures)
    if (feature.busy && feature.busy(state)) return true;
  return false;
}

bool featuresKey(AppState& state, const KeyPress& press) {
  for (const Feature& feature : kFeatures)
    if (feature.key && feature.key(state, press)) return true;
  return false;
}

void drawFeatures(AppState& state) {
  for (const Feature& feature : kFeatures)
    if (feature.draw && !feature.part_of) feature.draw(state);
}

void drawPanelParts(AppState& state, const char* panel) {
  for (const Feature& feature : kFeatures)
    if (feature.draw && feature.part_of && std::strcmp(feature.part_of, panel) == 0) feature.draw(state);
}

void drawPanelPart(AppState& state, const char* panel, const char* part) {
  for (const Feature& feature : kFeatures)
    if (feature.draw && feature.part_of && std::strcmp(feature.part_of, panel) == 0 && std::strcmp(feature.name, part) == 0)
      feature.draw(state);
}

const std::vector<PanelRow>& registeredPanels() {
  static const std::vector<PanelRow> panels = [] {
    std::vector<PanelRow> rows;
    for (const Feature& feature : kFeatures)
      if (feature.place.column != Column::None) rows.push_back({feature.name, feature.place});
    return rows;
  }();
  return panels;
}

void featuresToJson(const AppState& state, nlohmann::json& line) { forEach(&Feature::to_json, state, line); }
void finishFeatures(AppState& state) { forEach(&Feature::finish, state); }

}  // namespace attnscope
