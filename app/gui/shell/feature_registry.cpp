// The feature registry: one row per feature, run through by the shell (shell/app.cpp,
// shell/scripting.cpp). The rows are in frame order: the update steps, the panels and the
// overlays each run top to bottom (dragged panel borders first: they move the panels this
// frame; the metrics table before the grid: a sort or a row click shows in the grid the same
// frame). The shell's own windows (status bar, help, toast, notice) are rows too, for that order.
#include "gui/shell/feature_registry.h"

#include <optional>

#include "gui/features/compare/compare.h"
#include "gui/features/controls/controls.h"
#include "gui/features/focus/focus.h"
#include "gui/features/generate/generate.h"
#include "gui/features/head_grid/head_grid.h"
#include "gui/features/layer_maps/layer_maps.h"
#include "gui/features/lens/lens.h"
#include "gui/features/mask/mask.h"
#include "gui/features/metrics/metrics.h"
#include "gui/features/open/open_dialog.h"
#include "gui/features/overview/overview.h"
#include "gui/features/panel_borders/panel_borders.h"
#include "gui/features/pipeline/pipeline.h"
#include "gui/features/predictions/predictions.h"
#include "gui/features/query_focus/query_focus.h"
#include "gui/features/stepper/stepper.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// What the shell calls for one feature; a null hook is a step the feature does not have.
struct Feature {
  const char* name;
  void (*update_shown)(AppState&);             // changes the result the views show
  void (*update)(AppState&);                   // follows the shown result and the user's choices
  void (*follow_result)(AppState&);            // a new compute result arrived
  void (*ask)(const AppState&, ComputeAsk&);   // what the next compute job should bring
  bool (*busy)(const AppState&);               // work of its own in flight
  void (*draw)(AppState&);                     // its window, or its tab of tab_of's panel
  std::optional<Panel> tab_of;
  void (*to_json)(const AppState&, nlohmann::json&);  // its state-log keys
  void (*finish)(AppState&);                   // at shutdown
};

// clang-format off
constexpr Feature kFeatures[] = {
//  name             update_shown      update              follow_result      ask                busy                     draw                 tab_of              to_json              finish
  {"generate",       updateGeneration, nullptr,            nullptr,           nullptr,           generationRunning,       nullptr,             {},                 generateToJson,      finishGeneration},
  {"layer_maps",     updateLayerMaps,  nullptr,            nullptr,           nullptr,           nullptr,                 nullptr,             {},                 layerMapsToJson,     finishLayerMaps},
  {"panel_borders",  nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 updatePanelBorders,  {},                 panelBordersToJson,  nullptr},
  {"controls",       nullptr,          nullptr,            nullptr,           askControls,       nullptr,                 drawControlPanel,    {},                 controlsToJson,      nullptr},
  {"metrics",        nullptr,          updateHeadOrder,    nullptr,           nullptr,           nullptr,                 drawMetricsPanel,    {},                 headTableToJson,     nullptr},
  {"head_grid",      nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawHeadGridPanel,   {},                 headGridToJson,      nullptr},
  {"head_scroll",    nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 nullptr,             {},                 headScrollToJson,    nullptr},
  {"overview",       nullptr,          updateOverview,     nullptr,           nullptr,           nullptr,                 nullptr,             {},                 overviewToJson,      nullptr},
  {"focus",          nullptr,          updateZoomView,     followResultInFocus, nullptr,         zoomTilePending,         drawFocusPanel,      {},                 focusToJson,         nullptr},
  {"compare",        nullptr,          updateComparison,   nullptr,           nullptr,           nullptr,                 nullptr,             {},                 compareToJson,       nullptr},
  {"query_focus",    nullptr,          updateQueryFocus,   nullptr,           nullptr,           nullptr,                 nullptr,             {},                 queryFocusToJson,    nullptr},
  {"predictions",    nullptr,          updatePredictions,  nullptr,           askLogitRows,      laterPredictionsPending, drawPredictionsPanel, {},                predictionsToJson,   nullptr},
  {"lens",           nullptr,          updateLens,         nullptr,           askLens,           nullptr,                 drawLensTab,         Panel::Predictions, lensToJson,          nullptr},
  {"mask",           nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawMaskPanel,       {},                 maskToJson,          nullptr},
  {"pipeline",       nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawPipelinePanel,   {},                 nullptr,             nullptr},
  {"stepper",        nullptr,          advanceStepperPlay, clampStep,         askDecode,         stepperPlaying,          drawStepperPanel,    {},                 stepperToJson,       nullptr},
  {"status_bar",     nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawStatusBar,       {},                 nullptr,             nullptr},
  {"help",           nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawHelpOverlay,     {},                 nullptr,             nullptr},
  {"open_dialog",    nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawOpenDialog,      {},                 openDialogToJson,    nullptr},
  {"toast",          nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawToast,           {},                 nullptr,             nullptr},
  {"notice",         nullptr,          nullptr,            nullptr,           nullptr,           nullptr,                 drawNotice,          {},                 nullptr,             nullptr},
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

void drawFeatures(AppState& state) {
  for (const Feature& feature : kFeatures)
    if (feature.draw && !feature.tab_of) feature.draw(state);
}

void drawPanelTabs(AppState& state, Panel panel) {
  for (const Feature& feature : kFeatures)
    if (feature.draw && feature.tab_of == panel) feature.draw(state);
}

void featuresToJson(const AppState& state, nlohmann::json& line) { forEach(&Feature::to_json, state, line); }
void finishFeatures(AppState& state) { forEach(&Feature::finish, state); }

}  // namespace attnscope
