// The focus panel's "Interventions" tab: draws the toggles and the list; every change is one
// call of interventions.cpp.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "gui/features/interventions/interventions.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

void drawAblateToggle(AppState& state) {
  const std::string head = "L" + std::to_string(state.view.focus.layer) + "H" + std::to_string(state.view.focus.head);
  const std::optional<AblationMode> now = focusedAblation(state);
  ImGui::AlignTextToFramePadding();
  ImGui::Text("focused head %s:", head.c_str());
  const std::pair<std::optional<AblationMode>, const char*> choices[] = {
      {std::nullopt, "on"}, {AblationMode::Zero, "ablate (zero)"}, {AblationMode::Mean, "ablate (mean)"}};
  for (const auto& [mode, label] : choices) {
    ImGui::SameLine();
    const std::string name = std::string("interventions_ablate_") + (!mode ? "off" : *mode == AblationMode::Zero ? "zero" : "mean");
    if (ui::radioButton(state.script.layout, name, label, now == mode) && now != mode) ablateFocusedHead(state, mode);
  }
}

void drawKnockout(AppState& state) {
  InterventionsState& s = state.feature<InterventionsState>();
  const int64_t L = state.compute.view ? state.compute.view->mapL() : 0;
  const int last = static_cast<int>(std::max<int64_t>(L - 1, 0));
  s.query = s.query < 0 ? last : std::min(s.query, last);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("knock out query");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90.0f);
  ui::inputInt(state.script.layout, "interventions_query", "##query", &s.query);
  ImGui::SameLine();
  ImGui::TextUnformatted("key");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90.0f);
  ui::inputInt(state.script.layout, "interventions_key", "##key", &s.key);
  s.query = std::clamp(s.query, 0, last);
  s.key = std::clamp(s.key, 0, s.query);  // a causal query attends to itself and the keys before
  if (ui::button(state.script.layout, "interventions_knock_head", "this head")) knockOutCell(state, s.query, s.key, false);
  ImGui::SameLine();
  if (ui::button(state.script.layout, "interventions_knock_layer", "every head of the layer"))
    knockOutCell(state, s.query, s.key, true);
}

void drawList(AppState& state) {
  const std::vector<std::string> lines = interventionLines(appInterventions(state));
  if (lines.empty()) {
    ImGui::TextDisabled("no interventions: the model as trained");
    return;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    if (ui::smallButton(state.script.layout, "interventions_undo_" + std::to_string(i), "undo")) undoIntervention(state, i);
    ImGui::PopID();
    ImGui::SameLine();
    ImGui::TextColored(kInterventionColor, "%s", lines[i].c_str());
  }
  if (ui::button(state.script.layout, "interventions_clear", "clear all")) clearInterventions(state);
}

}  // namespace

void drawInterventionsPanel(AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!v || v->source != ViewSource::ModelRun) {
    ImGui::TextDisabled("interventions apply to a trained model's run (choose one under Models)");
    return;
  }
  drawAblateToggle(state);
  drawKnockout(state);
  ImGui::Separator();
  ImGui::TextUnformatted("Interventions");
  drawList(state);
  ImGui::TextDisabled("the predictions panel shows before -> after at the last position");
}

}  // namespace attnscope
