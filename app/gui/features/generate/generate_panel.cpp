// The Generate section of the control panel (model folders): how many tokens, greedy or
// sampling settings, Generate / Stop, Follow, and the text so far (prompt, then the
// generated tokens in colour) with a button that puts it into the text box.
#include <imgui.h>

#include <algorithm>

#include "gui/features/generate/generate.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

const ImVec4 kGenerated(0.45f, 0.9f, 0.5f, 1.0f);

// Labels end in ##generate: the sandbox's own "seed" and "temperature" share the window.
void drawSamplingControls(AppState& state) {
  GenerateControls& c = state.feature<GenerateState>().controls;
  WidgetRects& rects = state.script.layout;
  ui::checkbox(rects, "generate_greedy", "greedy##generate", &c.greedy);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("always the most likely token; off: sample (temperature, top-k, top-p, seed)");
  if (c.greedy) return;
  ImGui::SliderFloat("temperature##generate", &c.temperature, 0.05f, 2.0f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
  ImGui::InputInt("top-k (0 = all)##generate", &c.top_k);
  c.top_k = std::max(0, c.top_k);
  ImGui::SliderFloat("top-p##generate", &c.top_p, 0.05f, 1.0f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
  ui::inputInt(rects, "generate_seed", "seed##generate", &c.seed);
  c.seed = std::max(0, c.seed);
}

// The KV cache's sinks + causal window, as the stepper's sinks:K + causal-window:W.
void drawCacheWindowControls(AppState& state) {
  GenerateControls& c = state.feature<GenerateState>().controls;
  WidgetRects& rects = state.script.layout;
  ui::checkbox(rects, "generate_cache_on", "cache window + sinks##generate", &c.cache_on);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("each row sees the first K tokens (sinks), itself and the W tokens before it; the KV cache "
                      "keeps K + W entries per layer between steps (a model's own sliding window still applies)");
  if (!c.cache_on) return;
  ui::inputInt(rects, "generate_cache_window", "cache W##generate", &c.cache_window);
  c.cache_window = std::clamp(c.cache_window, 0, 1 << 20);
  ui::inputInt(rects, "generate_cache_sinks", "sinks K##generate", &c.cache_sinks);
  c.cache_sinks = std::clamp(c.cache_sinks, 0, 1 << 20);
}

void drawButtons(AppState& state) {
  GenerateState& g = state.feature<GenerateState>();
  WidgetRects& rects = state.script.layout;
  ImGui::BeginDisabled(g.running);
  if (ui::button(rects, "generate_button", "Generate")) startGeneration(state);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!g.running);
  if (ui::button(rects, "generate_stop", "Stop##generate")) stopGeneration(state, "stop button");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ui::checkbox(rects, "generate_follow", "Follow##generate", &g.controls.follow);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("a zoomed focus view keeps the newest row in view");
}

// Where the generation stands, the text so far and the button that puts it into the text box.
void drawProgress(AppState& state) {
  const GenerateState& g = state.feature<GenerateState>();
  const GenerationSnapshot* s = g.snapshot.get();
  if (!s) {
    if (g.running) ImGui::TextDisabled("loading the model...");
    return;
  }
  WidgetRects& rects = state.script.layout;
  if (!s->error.empty()) {
    errorText(rects, "generate_error", s->error);
    return;
  }
  const long long steps = static_cast<long long>(s->steps.size());
  if (g.running)
    ui::text(rects, "generate_status", ui::plainText(), "generating: %lld of %d tokens", steps, g.controls.tokens);
  else
    ui::text(rects, "generate_status", ui::plainText(), "%lld tokens, stopped at %s%s%s", steps, s->stop.c_str(),
             g.stopped_by.empty() ? "" : " by ", g.stopped_by.c_str());
  ImGui::BeginChild("generate_text", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 6.0f), true);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("%s", s->prompt_text.c_str());
  ImGui::PopStyleColor();
  ImGui::PushStyleColor(ImGuiCol_Text, kGenerated);
  ImGui::TextWrapped("%s", s->generated_text.c_str());
  ImGui::PopStyleColor();
  if (g.running && g.controls.follow) ImGui::SetScrollHereY(1.0f);  // the newest token in view
  ui::endChild(rects, "generate_text");
  if (g.running || s->generated_text.empty()) return;
  if (ui::smallButton(rects, "generate_use_text", "put into the text box")) {
    state.settings.model_text = s->prompt_text + s->generated_text;
    settingsEdited(state);
  }
}

// The focused head over the generation: the mass each step gives to the first token and to
// the last W tokens (core: analysis/generation_mass.h), one small plot each.
void drawMassPlots(AppState& state) {
  const GenerationSnapshot* s = state.feature<GenerateState>().snapshot.get();
  const ViewFocus& f = state.view.focus;
  if (!s || !s->mass || s->mass->steps == 0 || f.layer >= s->mass->layers || f.head >= s->mass->H ||
      f.batch_item >= s->mass->B)
    return;
  const GenerationMass& m = *s->mass;
  const int steps = static_cast<int>(m.steps);
  const ImVec2 size(ImGui::GetContentRegionAvail().x, ImGui::GetTextLineHeight() * 2.5f);
  ImGui::Text("L%lldH%lld over %d steps (0..1):", static_cast<long long>(f.layer), static_cast<long long>(f.head), steps);
  ui::plotLines(state.script.layout, "generate_plot_sink", "##gen_sink", m.sinkSeries(f.layer, f.batch_item, f.head), steps,
                "first token (sink)", 0.0f, 1.0f, size);
  const std::string recent = "last " + std::to_string(m.window) + " tokens";
  ui::plotLines(state.script.layout, "generate_plot_recent", "##gen_recent", m.recentSeries(f.layer, f.batch_item, f.head),
                steps, recent.c_str(), 0.0f, 1.0f, size);
}

}  // namespace

void drawGenerateSection(AppState& state) {
  sectionHeader("Generate");
  // An encoder (BERT) has no next token: the section says so instead of offering a Generate
  // that can only fail.
  if (const ViewModel* v = state.compute.view.get(); v && v->encoder && !state.feature<GenerateState>().running) {
    const std::string why = v->model + " is an encoder (bidirectional): it does not generate; its masked-LM "
                            "head guesses each position's own token (the predictions panel)";
    ui::text(state.script.layout, "generate_off", ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
             "%s", why.c_str());
    state.script.layout.recordText("generate_off", why);
    return;
  }
  GenerateControls& c = state.feature<GenerateState>().controls;
  const GenerateControls before = c;
  ui::inputInt(state.script.layout, "generate_tokens", "tokens##generate", &c.tokens);
  c.tokens = std::clamp(c.tokens, 1, 4096);
  drawSamplingControls(state);
  ImGui::InputInt("last W##generate", &c.recent_window);
  c.recent_window = std::clamp(c.recent_window, 1, 4096);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the plots and the head table's 'gen last W': mass on the last W tokens");
  drawCacheWindowControls(state);
  drawButtons(state);
  if (before != c) markStateChanged(state);  // the state log shows the controls
  drawProgress(state);
  drawMassPlots(state);
}

}  // namespace attnscope
