#include "gui/features/induction_probe/induction_probe.h"

#include <imgui.h>

#include <algorithm>

#include "gui/shell/panels.h"
#include "model/induction_probe.h"

namespace attnscope {

void putInductionProbe(AppState& state) {
  InductionProbeState& p = state.feature<InductionProbeState>();
  const FolderWeights weights = state.compute.worker ? state.compute.worker->loadedWeights() : FolderWeights{};
  if (!weights.loaded()) {
    p.error = "no model loaded yet";
    markStateChanged(state);
    return;
  }
  try {
    const InductionProbe probe = repeatedRandomTokens(*weights.model, p.n, p.seed);
    state.settings.model_text = probe.text;
    p.last_n = probe.n, p.last_seed = p.seed++;
    p.error.clear();
    settingsEdited(state);
  } catch (const InputError& e) {
    p.error = e.what();
    markStateChanged(state);
  }
}

void drawInductionProbeSection(AppState& state) {
  InductionProbeState& p = state.feature<InductionProbeState>();
  sectionHeader("Induction probe");
  if (ui::button(state.script.layout, "probe_button", "repeated random tokens")) putInductionProbe(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("BOS, then N random tokens (seed %llu), then the same N again, into the text box;\n"
                      "the induction column then reads the stripe p[i, i - N + 1] (TransformerLens' score)",
                      static_cast<unsigned long long>(p.seed));
  constexpr float kInputWidth = 110.0f;
  sameLineIfFits(kInputWidth + ImGui::CalcTextSize("N").x + ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::SetNextItemWidth(kInputWidth);
  if (ui::inputInt(state.script.layout, "probe_n", "N##probe", &p.n)) markStateChanged(state);
  p.n = std::clamp(p.n, 2, 4096);
  if (!p.error.empty()) errorText(state.script.layout, "probe_error", p.error);
}

void inductionProbeToJson(const AppState& state, nlohmann::json& line) {
  const InductionProbeState& p = state.feature<InductionProbeState>();
  line["induction_probe"] = {{"n", p.n}, {"seed", p.seed}, {"last_n", p.last_n}, {"last_seed", p.last_seed}, {"error", p.error}};
}

}  // namespace attnscope
