#include "gui/shell/view_state.h"

#include <algorithm>

namespace attnscope {

ViewFocus clampFocus(ViewFocus focus, const FocusLimits& limits) {
  if (!limits.known) return focus;
  focus.layer = std::clamp<int64_t>(focus.layer, 0, limits.layers - 1);
  focus.batch_item = std::clamp<int64_t>(focus.batch_item, 0, limits.batch - 1);
  focus.head = std::clamp<int64_t>(focus.head, 0, limits.heads - 1);
  return focus;
}

nlohmann::json pickJson(const MapPick& pick) {
  const std::string run = pick.other_file               ? "other_file"
                          : pick.with != Mistake::None ? std::string("with:") + mistakeName(pick.with)
                          : pick.correct_run           ? "correct"
                                                       : "this";
  return {{"layer", pick.layer}, {"head", pick.head}, {"run", run}};
}

bool rememberModel(ViewState& view, const std::string& folder) {
  std::vector<std::string>& recent = view.recent_models;
  if (!recent.empty() && recent.front() == folder) return false;
  recent.erase(std::remove(recent.begin(), recent.end(), folder), recent.end());
  recent.insert(recent.begin(), folder);
  if (recent.size() > kRecentModels) recent.resize(kRecentModels);
  return true;
}

const char* focusTabName(FocusTab tab) {
  switch (tab) {
    case FocusTab::Maps: return "maps";
    case FocusTab::Compare: return "compare";
    case FocusTab::QueryFocus: return "query_focus";
    case FocusTab::Interventions: return "interventions";
    case FocusTab::Patching: return "patching";
  }
  return "maps";
}

}  // namespace attnscope
