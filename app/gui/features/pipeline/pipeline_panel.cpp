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
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// One box of a chain: how we got here (arrow label) and the shape we arrived at.
struct Step {
  std::string arrow;     // "q_proj", "view", ...; empty for the first box of a chain
  std::string symbolic;  // "[B, L, H*d]"
  Shape shape;
  std::string op, code;
};

struct Chain {
  const char* title;
  std::vector<Step> steps;
};

const Stage* findStage(const AttentionTrace& t, const char* name) {
  for (const Stage& stage : t.stages)
    if (stage.name == name) return &stage;
  return nullptr;
}

Step fromStage(const AttentionTrace& t, const char* name, std::string arrow, std::string symbolic) {
  Step step{std::move(arrow), std::move(symbolic), {}, "", ""};
  if (const Stage* stage = findStage(t, name)) {
    step.shape = stage->shape;
    step.op = stage->op;
    step.code = stage->code;
  }
  return step;
}

Chain projectionChain(const AttentionTrace& t, bool folded, char x, const char* len, const char* input_size) {
  const std::string p(1, x);
  Chain chain{x == 'q' ? "Q" : x == 'k' ? "K" : "V", {}};
  const char* names[] = {x == 'q' ? "query" : x == 'k' ? "key" : "value"};
  // Grouped-query attention: K and V have G heads of their own until repeat_interleave.
  const std::string heads = x != 'q' && t.G != t.H ? "G" : "H";
  chain.steps.push_back(fromStage(t, names[0], "", std::string("[B, ") + len + ", " + input_size + "]"));
  chain.steps.push_back(fromStage(t, (p + "_proj").c_str(), p + "_proj", std::string("[B, ") + len + ", " + heads + "*d]"));
  if (!folded) {
    chain.steps.push_back(fromStage(t, (p + "_view").c_str(), "view", std::string("[B, ") + len + ", " + heads + ", d]"));
    chain.steps.push_back(
        fromStage(t, (p + "_transpose").c_str(), "transpose(1,2)", "[B, " + heads + ", " + len + ", d]"));
    if (findStage(t, (p + "_rope").c_str()))
      chain.steps.push_back(fromStage(t, (p + "_rope").c_str(), "RoPE", "[B, " + heads + ", " + len + ", d]"));
    if (findStage(t, (p + "_repeat").c_str())) {
      chain.steps.push_back(
          fromStage(t, (p + "_repeat").c_str(), "repeat_interleave(H/G, dim=1)", std::string("[B, H, ") + len + ", d]"));
    }
  } else {
    const int64_t T = x == 'q' ? t.L : t.S;
    chain.steps.push_back({"transpose_qkv", std::string("[B*H, ") + len + ", d]", {t.B * t.H, T, t.d},
                           "reshape + permute(0, 2, 1, 3) + reshape",
                           p + " = transpose_qkv(self.W_" + p + "(" + (x == 'q' ? "queries" : x == 'k' ? "keys" : "values") +
                               "), self.num_heads)"});
  }
  return chain;
}

std::vector<Chain> buildChains(const AttentionTrace& t, bool folded) {
  std::vector<Chain> chains;
  chains.push_back(projectionChain(t, folded, 'q', "L", "Dq"));
  chains.push_back(projectionChain(t, folded, 'k', "S", "Dk"));
  chains.push_back(projectionChain(t, folded, 'v', "S", "Dv"));
  Chain attention{"attention", {}};
  Chain output{"output", {}};
  if (!folded) {
    attention.steps.push_back(fromStage(t, "scores", "Q K^T * scale", "[B, H, L, S]"));
    if (findStage(t, "softcap")) attention.steps.push_back(fromStage(t, "softcap", "soft-cap", "[B, H, L, S]"));
    if (findStage(t, "alibi")) attention.steps.push_back(fromStage(t, "alibi", "+ ALiBi", "[B, H, L, S]"));
    attention.steps.push_back(fromStage(t, "masked_scores", "mask", "[B, H, L, S]"));
    attention.steps.push_back(fromStage(t, "probs", "softmax", "[B, H, L, S]"));
    attention.steps.push_back(fromStage(t, "dropout", "dropout", "[B, H, L, S]"));
    output.steps.push_back(fromStage(t, "context_heads", "x V", "[B, H, L, d]"));
    output.steps.push_back(fromStage(t, "context_transpose", "transpose(1,2)", "[B, L, H, d]"));
    output.steps.push_back(fromStage(t, "context_view", "view", "[B, L, D]"));
    output.steps.push_back(fromStage(t, "output", "o_proj", "[B, L, D]"));
  } else {
    const Shape bh_ls{t.B * t.H, t.L, t.S};
    attention.steps.push_back({"Q K^T / sqrt(d)", "[B*H, L, S]", bh_ls, "bmm",
                               "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)"});
    attention.steps.push_back({"masked_softmax", "[B*H, L, S]", bh_ls, "softmax with valid_lens",
                               "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"});
    attention.steps.push_back({"dropout", "[B*H, L, S]", bh_ls, "dropout",
                               "self.dropout(self.attention_weights)"});
    output.steps.push_back({"x V", "[B*H, L, d]", {t.B * t.H, t.L, t.d}, "bmm",
                            "output = torch.bmm(self.dropout(self.attention_weights), values)"});
    output.steps.push_back({"transpose_output", "[B, L, H*d]", {t.B, t.L, t.D},
                            "reshape + permute(0, 2, 1, 3) + reshape",
                            "output_concat = transpose_output(output, self.num_heads)"});
    output.steps.push_back(fromStage(t, "output", "W_o", "[B, L, D]"));
  }
  chains.push_back(std::move(attention));
  chains.push_back(std::move(output));
  return chains;
}

const ImVec4 kWarning(1.0f, 0.62f, 0.18f, 1.0f);  // mistakes lab: the buggy stages

bool isBuggy(const Step& step) { return step.code.find("# BUG") != std::string::npos; }

void drawChain(const Chain& chain) {
  ImGui::TextColored(ImVec4(0.55f, 0.78f, 1.0f, 1.0f), "%s", chain.title);
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::Indent(10.0f);
  for (size_t n = 0; n < chain.steps.size(); ++n) {
    const Step& step = chain.steps[n];
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

}  // namespace

void drawPipelinePanel(AppState& state) {
  if (beginPanelWindow(state, "Shape pipeline", "pipeline")) {
    constexpr const char* kFoldedLabel = "folded heads [B*H, L, d]";
    if (ui::checkbox(state.script.layout, "folded_toggle", kFoldedLabel, &state.settings.folded_layout))
      settingsEdited(state);
    state.script.layout.recordText("folded_toggle", kFoldedLabel);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("heads folded into the batch, as in seed listing 004");
    // A trained model's run: the focused layer's attention (every layer has its trace).
    const ViewModel* model_run = state.compute.view && state.compute.view->source == ViewSource::ModelRun &&
                                         !state.compute.view->tiled &&
                                         state.compute.error().empty()
                                     ? state.compute.view.get()
                                     : nullptr;
    const AttentionTrace* layer_trace =
        model_run ? model_run->maps[std::min<int64_t>(state.view.focus.layer, model_run->layers - 1)].trace.get() : nullptr;
    if (model_run) ImGui::TextDisabled("%s, layer %lld: its attention", model_run->model.c_str(),
                                       static_cast<long long>(state.view.focus.layer));
    if (const AttentionTrace* t = layer_trace ? layer_trace : state.compute.trace()) {
      shapesLine(state, {{"B", t->B}, {"L", t->L}, {"S", t->S}, {"D", t->D}, {"H", t->H}, {"d", t->d}});
      drawConstraints(state);
      if (!t->variants.empty()) drawVariants(*t);
      if (t->mistake != Mistake::None) drawMistake(*t);
      sectionHeader("Stages");
      ImGui::TextDisabled("hover a shape for its PyTorch line");
      for (const Chain& chain : buildChains(*t, state.settings.folded_layout)) drawChain(chain);
    } else if (const ViewModel* v = state.compute.imported() ? state.compute.view.get() : nullptr) {
      shapesLine(state, {{"layers", v->layers}, {"B", v->B}, {"H", v->H}, {"L", v->L}, {"S", v->S}});
      ImGui::TextWrapped("imported attention maps%s%s: computed elsewhere, so there are no stages to show.",
                         v->model.empty() ? "" : " from ", v->model.c_str());
      if (!v->notes.empty()) ImGui::TextWrapped("notes: %s", v->notes.c_str());
    } else if (const ViewModel* v = state.compute.view && state.compute.view->tiled && state.compute.error().empty()
                                        ? state.compute.view.get()
                                        : nullptr) {
      drawConstraints(state);
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

}  // namespace attnscope
