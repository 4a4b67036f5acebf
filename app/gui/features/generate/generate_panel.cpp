// The Generate section of the control panel (model folders): how many tokens, greedy or
// sampling settings, Generate / Stop, Follow, and the text so far (prompt, then the
// generated tokens in colour) with a button that puts it into the text box.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "gui/features/generate/generate.h"
#include "gui/shell/panels.h"
#include "view/number_text.h"

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

// A line wrapped at the panel's edge (the left column is narrow), recorded for the tests.
void wrappedLine(WidgetRects& rects, const std::string& name, const std::string& text) {
  ui::text(rects, name, ui::wrappedText(), "%s", text.c_str());
  rects.recordText(name, text);
}

// How a generation ended, after "24 tokens, " (GenerationSnapshot::stop, and what stopped it);
// an error shows the error instead.
struct EndReason {
  const char* stop;        // Generation::stop
  const char* stopped_by;  // GenerateState::stopped_by ("" = any)
  const char* text;
};
constexpr EndReason kEndReasons[] = {
    {"tokens", "", "done"},
    {"eos", "", "stopped at the end-of-sequence token"},
    {"context", "", "stopped: the context is full"},
    {"stopped", "text edited", "stopped: the text was edited"},
    {"stopped", "", "stopped"},
};

std::string endReason(const std::string& stop, const std::string& stopped_by) {
  for (const EndReason& r : kEndReasons)
    if (stop == r.stop && (!*r.stopped_by || stopped_by == r.stopped_by)) return r.text;
  return "stopped (" + stop + ")";  // a reason this table does not know yet
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
  if (ui::checkbox(rects, "generate_follow", "Follow##generate", &g.controls.follow) && g.controls.follow)
    unpinQueryRow(state);  // the predictions show the newest step again
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("a zoomed focus view keeps the newest row in view; the predictions show the newest step");
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
  const std::string steps = std::to_string(s->steps.size()) + (s->steps.size() == 1 ? " token" : " tokens");
  wrappedLine(rects, "generate_status",
              g.running ? "generating: " + steps + " of " + std::to_string(g.controls.tokens)
                        : steps + ", " + endReason(s->stop, g.stopped_by));
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

// One series over the steps: "title: now x, mean y (min..max)", then the plot on the series'
// own range (SeriesScale: a narrow series is not a flat line at the foot of 0..1) with that
// range printed at its top and bottom left.
void drawSeries(AppState& state, const std::string& name, const std::string& title, const float* values, int steps,
                const SeriesScale& scale) {
  WidgetRects& rects = state.script.layout;
  wrappedLine(rects, name + "_values",
              title + ": now " + significantText(scale.last) + ", mean " + significantText(scale.mean) + " (" +
                  significantText(scale.min) + ".." + significantText(scale.max) + ")");
  const std::string top = significantText(scale.hi), bottom = significantText(scale.lo);
  const float axis_w = std::max(ImGui::CalcTextSize(top.c_str()).x, ImGui::CalcTextSize(bottom.c_str()).x) + 6.0f;
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const ImVec2 size(ImGui::GetContentRegionAvail().x - axis_w, ImGui::GetTextLineHeight() * 3.0f);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  list->AddText(at, axis, top.c_str());
  list->AddText(ImVec2(at.x, at.y + size.y - ImGui::GetTextLineHeight()), axis, bottom.c_str());
  rects.recordText(name + "_axis", bottom + ".." + top);
  ImGui::SetCursorScreenPos(ImVec2(at.x + axis_w, at.y));
  ui::plotLines(rects, name, ("##" + name).c_str(), values, steps, nullptr, scale.lo, scale.hi, size);
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
  ImGui::Text("L%lldH%lld over %d steps:", static_cast<long long>(f.layer), static_cast<long long>(f.head), steps);
  drawSeries(state, "generate_plot_sink", "first token (sink)", m.sinkSeries(f.layer, f.batch_item, f.head), steps,
             m.sinkScale(f.layer, f.batch_item, f.head));
  drawSeries(state, "generate_plot_recent", "last " + std::to_string(m.window) + " tokens",
             m.recentSeries(f.layer, f.batch_item, f.head), steps, m.recentScale(f.layer, f.batch_item, f.head));
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
