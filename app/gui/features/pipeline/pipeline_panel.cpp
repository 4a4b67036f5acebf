// The shape pipeline: every stage of the trace in order, with live shapes, the PyTorch
// line of each stage on hover, seed 004's folded-heads layout as an alternative, and the
// three shape constraints (red when violated).
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gui/features/pipeline/pipeline.h"
#include "gui/features/pipeline/pipeline_chains.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

const ImVec4 kWarning(1.0f, 0.62f, 0.18f, 1.0f);  // mistakes lab: the buggy stages

bool isBuggy(const PipelineStep& step) { return step.code.find("# BUG") != std::string::npos; }

void drawChain(const PipelineChain& chain) {
  ImGui::TextColored(ImVec4(0.55f, 0.78f, 1.0f, 1.0f), "%s", chain.title);
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::Indent(10.0f);
  for (size_t n = 0; n < chain.steps.size(); ++n) {
    const PipelineStep& step = chain.steps[n];
    const std::string shape = shapeToString(step.shape);
    const std::string arrow = step.arrow.empty() ? "" : "--" + step.arrow + "-->";
    const float width = ImGui::CalcTextSize((arrow + " " + shape).c_str()).x + 16.0f;
    // Boxes follow the title and each other on a line while they fit, then wrap.
    ImGui::SameLine();
    if (ImGui::GetCursorScreenPos().x + width > right) ImGui::NewLine();
    ImGui::BeginGroup();
    if (!arrow.empty()) {
      ImGui::TextDisabled("%s", arrow.c_str());
      ImGui::SameLine(0, 4);
    }
    if (isBuggy(step)) {
      ImGui::TextColored(kWarning, "%s", shape.c_str());
    } else {
      ImGui::TextUnformatted(shape.c_str());
    }
    ImGui::EndGroup();
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::Text("%s   (%s)", step.symbolic.c_str(), step.op.c_str());
      ImGui::TextColored(isBuggy(step) ? kWarning : ImVec4(0.6f, 0.95f, 0.6f, 1.0f), "%s", step.code.c_str());
      ImGui::EndTooltip();
    }
  }
  ImGui::Unindent(10.0f);
}

void constraintLine(const char* name, bool known, bool ok, const std::string& detail) {
  const ImVec4 colour = !known ? ImVec4(0.6f, 0.6f, 0.6f, 1.0f)
                               : ok ? ImVec4(0.45f, 0.9f, 0.45f, 1.0f) : ImVec4(1.0f, 0.3f, 0.3f, 1.0f);
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextWrapped("%s %-10s %s", !known ? "?" : ok ? "ok " : "VIOLATED", name, detail.c_str());
  ImGui::PopStyleColor();
}

// The mistakes lab: what the active mistake did, and the buggy PyTorch lines it ran.
void drawMistake(const AttentionTrace& t) {
  ImGui::PushStyleColor(ImGuiCol_Text, kWarning);
  ImGui::TextWrapped("MISTAKE %s: %s", mistakeName(t.mistake), t.mistake_note.c_str());
  ImGui::PopStyleColor();
  for (const Stage& stage : t.stages) {
    if (stage.code.find("# BUG") == std::string::npos) continue;
    ImGui::Bullet();
    ImGui::PushStyleColor(ImGuiCol_Text, kWarning);
    ImGui::TextWrapped("%s: %s", stage.name.c_str(), stage.code.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.6f, 0.95f, 0.6f, 1.0f));
  ImGui::TextWrapped("fix: %s", mistakeFix(t.mistake));
  ImGui::PopStyleColor();
}

// The active variants, each with the PyTorch / Hugging Face line that performs it.
void drawVariants(const AttentionTrace& t) {
  sectionHeader("Variants");
  for (Variant v : t.variants) {
    const VariantInfo& info = variantInfo(v);
    ImGui::Bullet();
    if (v == Variant::GroupedQuery) {
      ImGui::TextWrapped("%s: G=%lld K/V heads for H=%lld (%lld query heads per group)", info.name,
                         static_cast<long long>(t.G), static_cast<long long>(t.H), static_cast<long long>(t.H / t.G));
    } else {
      ImGui::TextWrapped("%s", info.description);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", info.reference);
  }
}

void drawConstraints(AppState& state) {
  sectionHeader("Constraints");
  const InputFacts& f = state.compute.facts;
  if (f.known && f.D_k != f.D_q) {
    // Grouped-query attention: K/V projections of G heads of size d = D_Q / H, G | H.
    const int64_t H = f.H, d = H > 0 && f.D_q % H == 0 ? f.D_q / H : 0;
    const int64_t G = d > 0 && f.D_k % d == 0 ? f.D_k / d : 0;
    const bool ok = G > 0 && H % G == 0;
    constraintLine("D_K = G*d, G | H", true, ok,
                   "(D_K=" + std::to_string(f.D_k) + ", d=" + std::to_string(d) +
                       (G > 0 ? ", G=" + std::to_string(G) + ", H=" + std::to_string(H) : ": not a multiple") + ")");
  } else {
    constraintLine("D_Q = D_K", f.known, f.D_q == f.D_k,
                   f.known ? "(" + std::to_string(f.D_q) + ", " + std::to_string(f.D_k) + ")" : "");
  }
  constraintLine("L_K = L_V", f.known, f.S_key == f.S_value,
                 f.known ? "(" + std::to_string(f.S_key) + ", " + std::to_string(f.S_value) + ")" : "");
  // A D the user typed in the sandbox's controls is checked before any job is posted; else
  // the numbers are the run's (a trained model's own H, not the sandbox's heads setting).
  const bool typed_bad = !state.drafts.control_error.empty() && state.settings.source != InputSource::Model;
  const int64_t D = typed_bad ? state.drafts.typed_model_dim : f.D_q;
  const int64_t H = typed_bad ? state.settings.heads : f.H;
  const std::string detail = (typed_bad || f.known) && H > 0
                                 ? "D=" + std::to_string(D) + ", H=" + std::to_string(H) +
                                       (D % H == 0 ? ", d=" + std::to_string(D / H) : ", remainder " + std::to_string(D % H))
                                 : "";
  constraintLine("D % H == 0", typed_bad || f.known, !typed_bad && (H > 0 && f.D_q % H == 0), detail);
  state.script.layout.recordText("constraint_heads", detail);
}

// The run's shapes line ("B=1 L=17 ..."), as drawn and as logged (texts.pipeline_shapes).
void shapesLine(AppState& state, const std::vector<std::pair<const char*, int64_t>>& shapes) {
  std::string line;
  for (const auto& [name, value] : shapes) line += (line.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(value);
  ImGui::TextDisabled("%s", line.c_str());
  state.script.layout.recordText("pipeline_shapes", line);
}

// What the panel shows: a model run's focused layer (its trace unless tiled, its facts), else
// the sandbox's trace.
struct Shown {
  const ViewModel* model_run = nullptr;
  int64_t layer = 0;
  const AttentionTrace* trace = nullptr;  // null: tiled, imported or failed
  const LayerFacts* facts = nullptr;      // a model run's focused layer; null otherwise
};

Shown shownPipeline(const AppState& state) {
  Shown shown;
  const ViewModel* v = state.compute.view.get();
  if (v && v->source == ViewSource::ModelRun && state.compute.error().empty()) {
    shown.model_run = v;
    shown.layer = std::clamp<int64_t>(state.view.focus.layer, 0, v->layers - 1);
    if (!v->tiled) shown.trace = v->maps[shown.layer].trace.get();
    if (shown.layer < static_cast<int64_t>(v->layer_facts.size())) shown.facts = &v->layer_facts[shown.layer];
    return shown;
  }
  shown.trace = state.compute.trace();
  return shown;
}

// A model layer's own facts (its sizes, window, positions, q/k norm), greyed: the model fixes them.
void drawLayerFacts(AppState& state, const Shown& shown) {
  if (!shown.facts) return;
  sectionHeader(("Layer " + std::to_string(shown.layer)).c_str());
  const std::vector<std::string> lines = layerFactLines(*shown.facts);
  for (size_t n = 0; n < lines.size(); ++n)
    ui::text(state.script.layout, "pipeline_fact_" + std::to_string(n), ui::TextLook{ui::disabledText().color, true}, "%s",
             lines[n].c_str());
}

}  // namespace

void drawPipelinePanel(AppState& state) {
  if (beginPanelWindow(state, "Shape pipeline", "pipeline")) {
    constexpr const char* kFoldedLabel = "folded heads [B*H, L, d]";
    if (ui::checkbox(state.script.layout, "folded_toggle", kFoldedLabel, &state.settings.folded_layout))
      settingsEdited(state);
    state.script.layout.recordText("folded_toggle", kFoldedLabel);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("heads folded into the batch, as in seed listing 004");
    const Shown shown = shownPipeline(state);
    const AttentionTrace* layer_trace = shown.model_run ? shown.trace : nullptr;
    if (layer_trace) ImGui::TextDisabled("%s, layer %lld: its attention", shown.model_run->model.c_str(),
                                         static_cast<long long>(shown.layer));
    if (const AttentionTrace* t = shown.trace) {
      shapesLine(state, {{"B", t->B}, {"L", t->L}, {"S", t->S}, {"D", t->D}, {"H", t->H}, {"d", t->d}});
      drawLayerFacts(state, shown);
      drawConstraints(state);
      if (!t->variants.empty()) drawVariants(*t);
      if (t->mistake != Mistake::None) drawMistake(*t);
      sectionHeader("Stages");
      ImGui::TextDisabled("hover a shape for its PyTorch line");
      for (const PipelineChain& chain : pipelineChains(*t, state.settings.folded_layout, shown.facts)) drawChain(chain);
    } else if (const ViewModel* v = state.compute.imported() ? state.compute.view.get() : nullptr) {
      shapesLine(state, {{"layers", v->layers}, {"B", v->B}, {"H", v->H}, {"L", v->L}, {"S", v->S}});
      ImGui::TextWrapped("imported attention maps%s%s: computed elsewhere, so there are no stages to show.",
                         v->model.empty() ? "" : " from ", v->model.c_str());
      if (!v->notes.empty()) ImGui::TextWrapped("notes: %s", v->notes.c_str());
    } else if (const ViewModel* v = state.compute.view && state.compute.view->tiled && state.compute.error().empty()
                                        ? state.compute.view.get()
                                        : nullptr) {
      drawConstraints(state);
      drawLayerFacts(state, shown);
      ImGui::TextWrapped("tiled: L=%lld x S=%lld is too large to hold every stage; only Q and K are kept. The maps "
                         "are an overview of every head; zooming the focus view computes a window's exact cells.",
                         static_cast<long long>(v->mapL()), static_cast<long long>(v->mapS()));
    } else {
      drawConstraints(state);
      ImGui::TextWrapped("no trace: fix the settings (see the message in the control panel)");
    }
  }
  ImGui::End();
}

void pipelineToJson(const AppState& state, nlohmann::json& line) {
  const Shown shown = shownPipeline(state);
  nlohmann::json& out = line["pipeline"];
  out = {{"layer", nullptr}, {"facts", nullptr}, {"chains", nlohmann::json::object()}};
  if (shown.model_run) out["layer"] = shown.layer;
  if (const LayerFacts* f = shown.facts) {
    out["facts"] = {{"heads", f->heads}, {"kv_heads", f->kv_heads}, {"head_dim", f->head_dim},
                    {"own_head_dim", f->own_head_dim}, {"window", f->window}, {"sliding_window", f->sliding_window},
                    {"positions", layerPositionsName(f->positions)}, {"rope_base", f->rope_base},
                    {"rotary_dims", f->rotary_dims}, {"rope_type", f->rope_type}, {"qk_norm", qkNormName(f->qk_norm)},
                    {"softcap", f->softcap ? nlohmann::json(*f->softcap) : nlohmann::json(nullptr)},
                    {"lines", layerFactLines(*f)}};
  }
  if (!shown.trace) return;
  for (const PipelineChain& chain : pipelineChains(*shown.trace, state.settings.folded_layout, shown.facts)) {
    nlohmann::json& steps = out["chains"][chain.title] = nlohmann::json::array();
    for (const PipelineStep& step : chain.steps) steps.push_back({{"arrow", step.arrow}, {"shape", step.shape}});
  }
}

}  // namespace attnscope
