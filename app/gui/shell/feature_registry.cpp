// The feature registry: one row per feature the shell calls into, so that a feature plugs in
// with a row here instead of edits across the shell.
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// A tab a feature adds to another feature's panel (drawn inside that panel's tab bar).
struct PanelTab {
  Panel panel;
  void (*draw)(AppState&);
};
constexpr PanelTab kPanelTabs[] = {{Panel::Predictions, drawLensTab}};

}  // namespace

void drawPanelTabs(AppState& state, Panel panel) {
  for (const PanelTab& tab : kPanelTabs)
    if (tab.panel == panel) tab.draw(state);
}

}  // namespace attnscope
