// Left panel: every setting of the one Settings struct. Widgets clamp to valid values;
// combinations the maths rejects come back from the worker as a red message.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "gui/features/controls/controls.h"
#include "model/local_models.h"
#include "gui/jobs/export_jobs.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

constexpr ImGuiSliderFlags kClamp = ImGuiSliderFlags_AlwaysClamp;
// Synthetic L and S: maps past the full path's memory are shown in tiles (Run::tiled), up to 32k
// tokens as a long-context model has.
constexpr int64_t kMaxSyntheticLength = 32768;

bool sliderInt64(const char* label, int64_t* value, int64_t low, int64_t high,
                 ImGuiSliderFlags flags = kClamp) {
  return ImGui::SliderScalar(label, ImGuiDataType_S64, value, &low, &high, "%lld", flags);
}
// The same, recorded under `name`.
bool sliderInt64(WidgetRects& rects, const std::string& name, const char* label, int64_t* value, int64_t low,
                 int64_t high, ImGuiSliderFlags flags = kClamp) {
  return ui::sliderScalar(rects, name, label, ImGuiDataType_S64, value, &low, &high, "%lld", flags);
}

// Sizes of the current inputs: from the latest result when there is one, else the settings.
// Until the first result arrives the sizes are unknown and nothing is adjusted to them.
struct KnownSizes {
  bool known = false;
  int64_t B = 1, L = 1, S = 1;
};
KnownSizes knownSizes(const AppState& state) {
  if (const ViewModel* v = state.compute.view.get()) return {true, v->B, v->L, v->S};
  if (state.compute.facts.known) return {true, state.compute.facts.B, state.compute.facts.L, state.compute.facts.S_key};
  return {};
}

// "3,4" -> {3, 4}; false when a part is not a positive integer.
bool parseSegments(const std::string& text, std::vector<int64_t>& out) {
  out.clear();
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    char* end = nullptr;
    const long long n = std::strtoll(part.c_str(), &end, 10);
    if (end == part.c_str() || *end != '\0' || n < 1) return false;
    out.push_back(n);
  }
  return !out.empty();
}

// A combo over an enum whose values are 0, 1, ... in the order of names.
template <typename Enum, int N>
bool enumCombo(WidgetRects& rects, const std::string& name, const char* label, Enum& value,
               const char* const (&names)[N]) {
  int index = static_cast<int>(value);
  if (!ui::combo(rects, name, label, &index, names, N)) return false;
  value = static_cast<Enum>(index);
  return true;
}

// A mask term that is off at -1: a checkbox (recorded as layout_name) and, while ticked, a
// slider 0..span beside it. Ticking starts the term at min(start, span).
bool optionalTermControls(AppState& state, const char* label, const char* layout_name, int64_t& term,
                          int64_t start, int64_t span) {
  bool changed = false;
  bool on = term >= 0;
  if (ui::checkbox(state.script.layout, layout_name, label, &on)) {
    term = on ? std::min(start, span) : -1;
    changed = true;
  }
  if (on) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    changed |= sliderInt64((std::string("##") + layout_name).c_str(), &term, 0, span);
  }
  return changed;
}

float checkboxWidth(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}

constexpr const char* kSandboxLabel = "random-weights sandbox";

// A model path in the Models list: "file: NAME.gguf" or "folder: NAME"; a store's model by its
// name, "ollama: NAME:TAG" or "hf: ORG/NAME" (a cached Hugging Face snapshot too).
std::string modelPathLabel(const std::string& path) {
  if (std::string label = storeLabel(path); !label.empty()) return label;
  const std::filesystem::path p(path);
  return (p.extension() == ".gguf" ? "file: " : "folder: ") + p.filename().string();
}

// The Models choice's label for what the settings run.
std::string modelChoiceLabel(const Settings& s) {
  if (s.source == InputSource::Bundle && !s.bundle_path.empty())  // what it is, not the sandbox
    return "bundle: " + std::filesystem::path(s.bundle_path).lexically_normal().filename().string();
  if (s.source != InputSource::Model) return kSandboxLabel;
  if (s.model.find('/') == std::string::npos && !isStoreName(s.model)) return s.model;  // a shipped model
  return modelPathLabel(s.model);
}

void pickModel(AppState& state, const std::string& model) {
  Settings& s = state.settings;
  s.source = InputSource::Model;
  s.model = model;
  s.model_text = textForModel(s.model_text, std::filesystem::path(model).filename().string());
  state.view.selected_query = -1;
  setFocus(state, ViewFocus{});
}

// Models: the shipped models, the random-weights sandbox (every control) and model folders
// opened recently (view.json); Ctrl+O opens another.
bool drawModelsSection(AppState& state) {
  Settings& s = state.settings;
  const Settings before = s;
  sectionHeader("Models");
  ImGui::SetNextItemWidth(-1);
  WidgetRects& rects = state.script.layout;
  const std::string choice = modelChoiceLabel(s);
  rects.recordText("models_combo", choice);
  if (ui::Combo combo(rects, "models_combo", "##models", choice.c_str()); combo) {
    for (const ShippedModel& m : state.ui.shipped_models) {
      const bool current = s.source == InputSource::Model && s.model == m.name;
      if (ui::selectable(rects, "models_item_" + m.name, m.name.c_str(), current)) pickModel(state, m.name);
    }
    for (const std::string& folder : state.view.recent_models) {
      const std::string label = modelPathLabel(folder);
      if (ImGui::Selectable(label.c_str(), s.source == InputSource::Model && s.model == folder)) pickModel(state, folder);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", folder.c_str());
    }
    const bool sandbox = ui::selectable(rects, "models_item_sandbox", kSandboxLabel, s.source != InputSource::Model);
    if (sandbox && s.source == InputSource::Model) {
      s.source = InputSource::Text;
      setFocus(state, ViewFocus{});
    }
    if (ImGui::Selectable("Open model folder... (Ctrl+O)")) state.ui.open_requested = true;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("a trained model (assets/models, or a folder you open), or random weights with every control");
  if (state.ui.shipped_models.empty()) ImGui::TextDisabled("no shipped models found (assets/models)");
  return computeSettingsDiffer(before, s);
}

// "137 of 128 tokens", "more than 512 of 128 tokens": the latest job's count of the text.
std::string textCount(const InputFacts& f) {
  return (f.text_more ? "more than " : "") + std::to_string(f.text_tokens) + " of " + std::to_string(f.context) + " " +
         f.token_unit + " (context)";
}

// A text longer than the model's context: the real count, the one message about it (the maps
// keep the last text that fit, dimmed as out of date) and the choice to read the text's first
// or last context's worth instead (a setting: the text itself is left as typed). True when chosen.
bool drawTextTooLong(AppState& state) {
  const InputFacts& f = state.compute.facts;
  WidgetRects& rects = state.script.layout;
  const std::string count = textCount(f);
  ui::text(rects, "text_count", ui::coloredText(ImVec4(1.0f, 0.35f, 0.35f, 1.0f)), "%s", count.c_str());
  rects.recordText("text_count", count);
  errorText(rects, "text_too_long", textTooLongMessage(state));
  const std::string n = std::to_string(f.context) + " " + f.token_unit;
  Truncate& truncate = state.settings.model_truncate;
  if (ui::smallButton(rects, "truncate_end", ("use the first " + n).c_str())) truncate = Truncate::End;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the maps read the text's first %s; the text stays as typed", n.c_str());
  if (ui::smallButton(rects, "truncate_start", ("use the last " + n).c_str())) truncate = Truncate::Start;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the maps read the text's last %s; the text stays as typed", n.c_str());
  return truncate != Truncate::None;
}

// The count under the text box: the latest job's (an empty text reads 0), and when the run read
// only part of a longer text, which part, with the way back to refusing it. True when changed.
bool drawTextCount(AppState& state, const ViewModel& v) {
  const InputFacts& f = state.compute.facts;
  WidgetRects& rects = state.script.layout;
  if (f.context == 0) {  // no count from the latest job (a folder that failed to load): the view's
    ImGui::TextDisabled("%lld of %lld characters (context)", static_cast<long long>(v.mapL()),
                        static_cast<long long>(v.context));
    return false;
  }
  if (!f.text_cut) {
    const std::string count = textCount(f);
    ui::text(rects, "text_count", ui::disabledText(), "%s", count.c_str());
    rects.recordText("text_count", count);
    return false;
  }
  Truncate& truncate = state.settings.model_truncate;
  const std::string count = (f.text_more ? "more than " : "") + std::to_string(f.text_tokens) + " " + f.token_unit +
                            ": the maps read the " + (truncate == Truncate::Start ? "last " : "first ") +
                            std::to_string(f.context);
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
  ui::text(rects, "text_count", ui::wrappedText(), "%s", count.c_str());
  ImGui::PopStyleColor();
  rects.recordText("text_count", count);
  if (!ui::smallButton(rects, "truncate_off", "read all")) return false;
  truncate = Truncate::None;  // the text is refused again until it fits
  return true;
}

// A text that does not fit the model (characters outside its vocabulary, longer than its
// context), e.g. code after switching to reverse-digits: one click restores the model's
// sample text. True when clicked.
bool offerSampleText(AppState& state) {
  Settings& s = state.settings;
  const std::string name = std::filesystem::path(s.model).filename().string();
  const std::string sample = sampleText(name);
  if (sample.empty() || sample == s.model_text) return false;
  const bool clicked = ui::smallButton(state.script.layout, "restore_sample", ("use " + name + "'s sample text").c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", sample.c_str());
  if (clicked) s.model_text = sample;
  return clicked;
}

// "2 layers (h.0 .. h.1) x 3 heads": the layer names when the source gives them.
std::string layersAndHeads(const ViewModel& v) {
  std::string text = std::to_string(v.layers) + (v.layers == 1 ? " layer" : " layers");
  if (!v.maps.empty() && v.maps.front().name != "layer 0")  // named (bundle.json's layer_names)
    text += " (" + v.maps.front().name + (v.layers > 1 ? " .. " + v.maps.back().name : "") + ")";
  return text + " x " + std::to_string(v.H) + (v.H == 1 ? " head" : " heads");
}

// A trained model's input: the text it reads, with its caption and notable heads.
bool drawModelInput(AppState& state) {
  Settings& s = state.settings;
  const float width = ImGui::GetContentRegionAvail().x;
  const ViewModel* v = state.compute.view.get();
  const bool model_view = v && v->source == ViewSource::ModelRun;
  if (model_view && !v->notes.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ui::text(state.script.layout, "model_caption", ui::wrappedText(), "%s", v->notes.c_str());
    ImGui::PopStyleColor();
  }
  if (model_view) {  // the run's own facts (its heads and sizes are greyed below)
    const std::string facts = layersAndHeads(*v);
    ui::text(state.script.layout, "source_facts", ui::disabledText(), "%s", facts.c_str());
    state.script.layout.recordText("source_facts", facts);
  }
  if (model_view && !v->notable_heads.empty()) {
    std::string heads;
    for (const HeadNote& h : v->notable_heads) heads += (heads.empty() ? "" : ", ") + h.text();
    ImGui::TextWrapped("notable heads: %s", heads.c_str());
  }
  sectionHeader("Text");
  bool changed = ui::inputTextMultiline(state.script.layout, "text_box", "##model_text", &s.model_text,
                                        ImVec2(width, ImGui::GetTextLineHeight() * 6.5f));
  const bool unknown = model_view && v->unknown_tokens > 0;
  if (state.compute.textTooLong()) {
    changed |= drawTextTooLong(state);
  } else if (model_view) {
    changed |= drawTextCount(state, *v);
    if (unknown)
      warningText(std::to_string(v->unknown_tokens) +
                  (std::string(state.compute.facts.token_unit) == "tokens"
                       ? " word(s) the tokenizer does not know: shown as its unknown token (the tooltip gives the word)"
                       : " character(s) outside the vocabulary: shown as \"(unk)\""));
  }
  if (unknown || state.compute.textTooLong()) changed |= offerSampleText(state);
  return changed;
}

// An attention bundle's own facts (nothing of the sandbox applies to it): its model,
// layers (named as in bundle.json), heads, tokens and notes.
void drawImportedFacts(AppState& state, const ViewModel& v) {
  const std::string facts = (v.model.empty() ? "model not named" : "model: " + v.model) + "\n" + layersAndHeads(v) +
                            "\n" + std::to_string(v.L) + " queries x " + std::to_string(v.S) + " keys" +
                            (v.B > 1 ? ", batch of " + std::to_string(v.B) : "");
  ui::textUnformatted(state.script.layout, "source_facts", facts);
  if (!v.notes.empty())
    ui::text(state.script.layout, "source_notes", ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
             "%s", v.notes.c_str());
  if (v.first_generated < 0) return;  // a generation bundle: which tokens were generated, and their text
  const std::string generated = "generated: positions " + std::to_string(v.first_generated) + ".." +
                                std::to_string(v.L - 1) + " (after the prompt's " + std::to_string(v.first_generated) +
                                " tokens)";
  ui::text(state.script.layout, "source_generated", ui::TextLook{ImVec4(0.45f, 0.9f, 0.5f, 1.0f), true}, "%s",
           generated.c_str());
  state.script.layout.recordText("source_generated", generated);
  if (!v.generated_text.empty())
    ui::text(state.script.layout, "source_generated_text", ui::TextLook{ImVec4(0.45f, 0.9f, 0.5f, 1.0f), true}, "%s",
             v.generated_text.c_str());
}

bool drawInputSection(AppState& state, const KnownSizes& sizes) {
  Settings& s = state.settings;
  if (s.source == InputSource::Model) return drawModelInput(state);
  bool changed = false;
  sectionHeader("Input");
  int source = static_cast<int>(s.source);
  WidgetRects& rects = state.script.layout;
  changed |= ui::radioButton(rects, "source_text", "text", &source, static_cast<int>(InputSource::Text));
  ImGui::SameLine();
  changed |= ui::radioButton(rects, "source_synthetic", "synthetic", &source, static_cast<int>(InputSource::Synthetic));
  ImGui::SameLine();
  changed |= ui::radioButton(rects, "source_bundle", "bundle", &source, static_cast<int>(InputSource::Bundle));
  s.source = static_cast<InputSource>(source);

  const float width = ImGui::GetContentRegionAvail().x;
  switch (s.source) {
    case InputSource::Text:
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
      ImGui::TextWrapped("text: one line per batch item");
      ImGui::PopStyleColor();
      changed |= ui::inputTextMultiline(rects, "text_box", "##text", &s.text,
                                        ImVec2(width, ImGui::GetTextLineHeight() * 3.6f));
      changed |= ImGui::Checkbox("cross-attention (K/V text)", &s.cross_attention);
      if (s.cross_attention) {
        changed |= ImGui::InputTextMultiline("##key_text", &s.key_text,
                                             ImVec2(width, ImGui::GetTextLineHeight() * 2.4f));
      }
      break;
    case InputSource::Synthetic:
      changed |= sliderInt64(rects, "L_slider", "L (queries)", &s.synthetic_L, 1, kMaxSyntheticLength,
                             kClamp | ImGuiSliderFlags_Logarithmic);
      changed |= ImGui::Checkbox("cross-attention (S != L)", &s.cross_attention);
      if (s.cross_attention) {
        changed |= sliderInt64("S (keys)", &s.synthetic_S, 1, kMaxSyntheticLength, kClamp | ImGuiSliderFlags_Logarithmic);
      } else if (s.synthetic_S != s.synthetic_L) {
        s.synthetic_S = s.synthetic_L;
        changed = true;
      }
      changed |= sliderInt64("B (batch)", &s.batch, 1, 16);
      break;
    case InputSource::Bundle:
      ImGui::TextWrapped("%s", s.bundle_path.empty() ? "(no bundle chosen)" : s.bundle_path.c_str());
      if (const ViewModel* v = state.compute.imported() ? state.compute.view.get() : nullptr) drawImportedFacts(state, *v);
      if (ImGui::Button("Open bundle... (Ctrl+O)")) state.ui.open_requested = true;
      break;
    case InputSource::Model:  // drawModelInput
      break;
  }

  if (sizes.B > 1) {
    ViewFocus focus = state.view.focus;
    if (sliderInt64("batch item", &focus.batch_item, 0, sizes.B - 1)) setFocus(state, focus);
  }
  return changed;
}

// Draws a control greyed (ImGui's disabled style, the reason as its tooltip) while the
// current source does not read it (unusedControlReason); its rectangle recorded as `control`.
template <typename Draw>
bool drawUsedOrGreyed(AppState& state, const char* control, Draw draw) {
  const std::string why = unusedControlReason(state, control);
  ImGui::BeginDisabled(!why.empty());
  ImGui::BeginGroup();
  const bool changed = draw();
  ImGui::EndGroup();
  ImGui::EndDisabled();
  state.script.layout.recordItem(control);
  if (!why.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why.c_str());
  return changed;
}

bool drawHeadSize(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  ImGui::Checkbox("type D instead of d", &state.drafts.size_by_model_dim);
  const std::string model_dim = "D = H*d = " + std::to_string(s.modelDim());
  sameLineIfFits(ImGui::CalcTextSize(model_dim.c_str()).x);
  ui::text(state.script.layout, "model_dim_note", ui::disabledText(), "%s", model_dim.c_str());
  state.drafts.control_error.clear();
  if (state.drafts.size_by_model_dim) {
    if (ImGui::InputScalar("model size D", ImGuiDataType_S64, &state.drafts.typed_model_dim)) {
      state.drafts.typed_model_dim = std::clamp<int64_t>(state.drafts.typed_model_dim, 1, 8192);
    }
    if (state.drafts.typed_model_dim % s.heads != 0) {
      state.drafts.control_error = "D=" + std::to_string(state.drafts.typed_model_dim) + " is not divisible by H=" +
                            std::to_string(s.heads) + ": D % H == 0 is required (d = D / H)";
    } else if (state.drafts.typed_model_dim / s.heads != s.head_dim) {
      s.head_dim = state.drafts.typed_model_dim / s.heads;
      changed = true;
    }
  } else {
    changed |= sliderInt64("head size d", &s.head_dim, 1, 128);
    state.drafts.typed_model_dim = s.modelDim();
  }
  if (!state.drafts.control_error.empty()) errorText(state.drafts.control_error);
  return changed;
}

bool drawModelSection(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  sectionHeader("Model");
  changed |= sliderInt64(state.script.layout, "heads_slider", "heads H", &s.heads, 1, 16);
  changed |= drawUsedOrGreyed(state, "head_dim", [&] { return drawHeadSize(state); });
  changed |= drawUsedOrGreyed(state, "positional_encoding",
                              [&] { return ImGui::Checkbox("positional encoding", &s.positional_encoding); });
  ImGui::SameLine();
  changed |= drawUsedOrGreyed(state, "bias", [&] { return ImGui::Checkbox("bias", &s.bias); });
  changed |= drawUsedOrGreyed(state, "seed", [&] { return ImGui::InputScalar("seed", ImGuiDataType_U64, &s.seed); });
  return changed;
}

// The panel's side of the mask terms (each term is a row of maskTermKinds()): where a
// count starts when ticked (1 for a term not listed) and its layout name, "mask_causal_br".
int64_t termStart(const MaskTermKind& kind) {
  struct Start {
    const char* name;
    int64_t start;
  };
  static constexpr Start kStarts[] = {{"window", 2}, {"causal-window", 2}, {"sinks", 1}, {"prefix", 3}};
  for (const Start& row : kStarts)
    if (std::string(kind.name) == row.name) return row.start;
  return 1;
}

std::string termLayoutName(const MaskTermKind& kind) {
  std::string name = std::string("mask_") + kind.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Lengths (segments): a checkbox and, while ticked, the lengths typed as "4,6".
bool drawLengthsTerm(AppState& state, const MaskTermKind& kind, int64_t span) {
  std::vector<int64_t>& lengths = state.settings.mask.*kind.lengths;
  std::string& input = state.drafts.segments_input;
  bool changed = false;
  bool on = !lengths.empty();
  if (on && input.empty()) {  // loaded from a settings file
    for (int64_t n : lengths) input += (input.empty() ? "" : ",") + std::to_string(n);
  }
  if (ImGui::Checkbox(kind.label, &on)) {
    if (on) {
      const int64_t half = std::max<int64_t>(1, span / 2);
      input = std::to_string(half) + "," + std::to_string(std::max<int64_t>(1, span - half));
      parseSegments(input, lengths);
    } else {
      lengths.clear();
    }
    changed = true;
  }
  if (!on) return changed;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  std::vector<int64_t> parsed;
  if (ImGui::InputTextWithHint("##segments", "lengths, e.g. 4,6", &input) && parseSegments(input, parsed)) {
    lengths = parsed;
    changed = true;
  }
  if (!parseSegments(input, parsed)) errorText("segments: type positive lengths separated by commas, e.g. 4,6");
  return changed;
}

// A text's valid lengths (up to 16 sliders): each follows its line's token count
// (kFollowValidLen) until its slider sets it by hand; a button makes them all follow again.
bool drawTextValidLens(AppState& state) {
  Settings& s = state.settings;
  const std::vector<int64_t> natural = textKeyLengths(s), shown = textValidLensShown(s);
  const int64_t S = natural.empty() ? 0 : *std::max_element(natural.begin(), natural.end());
  bool changed = false, by_hand = false;
  for (size_t b = 0; b < shown.size() && b < 16; ++b) {
    const bool set = b < s.valid_lens.size() && s.valid_lens[b] != kFollowValidLen;
    by_hand |= set;
    int64_t len = shown[b];
    char label[48];
    // "###": the slider keeps its ID when its format changes from "= its line" to "(set)".
    std::snprintf(label, sizeof label, "valid len [%zu]###valid_len%zu", b, b);
    const int64_t low = 0;
    if (ui::sliderScalar(state.script.layout, "valid_len_" + std::to_string(b), label, ImGuiDataType_S64, &len, &low, &S,
                         set ? "%lld (set)" : "%lld = its line", kClamp)) {
      if (s.valid_lens.size() < shown.size()) s.valid_lens.resize(shown.size(), kFollowValidLen);
      s.valid_lens[b] = len;
      changed = true;
    }
  }
  if (by_hand) {
    if (ui::smallButton(state.script.layout, "valid_lens_follow", "follow the lines")) {
      s.valid_lens.clear();
      changed = true;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("every valid length follows its line's token count again");
  }
  return changed;
}

// Padding: the valid length of every batch item (up to 16 sliders). A text's items follow
// their lines (drawTextValidLens); other sources' start at 3/4 of S.
bool drawPaddingTerm(AppState& state, const MaskTermKind& kind, const KnownSizes& sizes) {
  Settings& s = state.settings;
  const bool text = s.source == InputSource::Text;
  bool changed = false;
  if (ui::checkbox(state.script.layout, termLayoutName(kind), kind.label, &(s.mask.*kind.flag))) {
    s.valid_lens.clear();
    if (s.mask.*kind.flag && !text) s.valid_lens.assign(sizes.B, std::max<int64_t>(1, sizes.S * 3 / 4));
    changed = true;
  }
  if (!(s.mask.*kind.flag)) return changed;
  if (text) return drawTextValidLens(state) || changed;
  if (sizes.known && static_cast<int64_t>(s.valid_lens.size()) != sizes.B) {
    s.valid_lens.resize(sizes.B, sizes.S);
    changed = true;
  }
  for (int64_t b = 0; b < static_cast<int64_t>(s.valid_lens.size()) && b < 16; ++b) {
    char label[32];
    std::snprintf(label, sizeof label, "valid len [%lld]", static_cast<long long>(b));
    changed |= sliderInt64(label, &s.valid_lens[b], 0, sizes.S);
  }
  return changed;
}

// A term that only widens the window terms (sinks): shown while one is on, else off.
bool drawWideningTerm(AppState& state, const MaskTermKind& kind, int64_t span) {
  MaskSpec& m = state.settings.mask;
  if (m.window >= 0 || m.causal_window >= 0) {
    const bool changed = optionalTermControls(state, kind.label, termLayoutName(kind).c_str(), m.*kind.count,
                                              termStart(kind), span);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", variantInfo(Variant::Sinks).description);
    return changed;
  }
  if (m.*kind.count < 0) return false;
  m.*kind.count = -1;
  return true;
}

// One row of maskTermKinds(): a checkbox for a flag (beside the flag before it when it
// fits), a checkbox and slider for a count, the lengths editor, the padding sliders.
bool drawMaskTerm(AppState& state, const MaskTermKind& kind, const KnownSizes& sizes, bool after_flag) {
  const int64_t span = std::max<int64_t>({sizes.L, sizes.S, 1});
  MaskSpec& m = state.settings.mask;
  if (kind.flag == &MaskSpec::padding) return drawPaddingTerm(state, kind, sizes);
  if (kind.lengths) return drawLengthsTerm(state, kind, span);
  if (kind.count && !kind.masks) return drawWideningTerm(state, kind, span);
  if (kind.count)
    return optionalTermControls(state, kind.label, termLayoutName(kind).c_str(), m.*kind.count, termStart(kind), span);
  if (after_flag) sameLineIfFits(checkboxWidth(kind.label));
  return ui::checkbox(state.script.layout, termLayoutName(kind), kind.label, &(m.*kind.flag));
}

// What masked scores become; the seed listings each choice comes from are in the tooltip.
bool drawFillCombo(AppState& state) {
  const char* fills[] = {"-inf", "-1e9"};
  const bool changed = enumCombo(state.script.layout, "fill_combo", "fill", state.settings.fill, fills);
  state.script.layout.recordText("fill_combo", std::string(fills[0]) + " / " + fills[1]);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("what masked scores become: -inf is added (the additive mask of seed listing 002); "
                      "-1e9 is masked_fill(mask == 0, -1e9) (seed listings 000 and 003)");
  return changed;
}

bool drawMaskSection(AppState& state, const KnownSizes& sizes) {
  bool changed = false;
  sectionHeader("Mask");
  bool after_flag = false;
  for (const MaskTermKind& kind : maskTermKinds()) {
    changed |= drawMaskTerm(state, kind, sizes, after_flag);
    after_flag = kind.flag && kind.flag != &MaskSpec::padding;
  }

  changed |= drawFillCombo(state);
  return changed;
}

bool drawScalingSection(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  sectionHeader("Scaling and dropout");
  if (ImGui::BeginCombo("scale", scaleChoiceLabel(s.scale))) {
    for (ScaleChoice choice : allScaleChoices()) {
      if (ImGui::Selectable(scaleChoiceLabel(choice), choice == s.scale) && choice != s.scale) {
        s.scale = choice;
        changed = true;
      }
    }
    ImGui::EndCombo();
  }
  if (s.scale == ScaleChoice::Temperature) {
    changed |= ImGui::SliderFloat("T", &s.temperature, 0.05f, 20.0f, "%.2f",
                                  kClamp | ImGuiSliderFlags_Logarithmic);
  }
  if (s.scale == ScaleChoice::Factor) {
    changed |= ImGui::SliderFloat("factor", &s.scale_factor, 0.001f, 10.0f, "%.4g",
                                  kClamp | ImGuiSliderFlags_Logarithmic);
  }
  // Dropout only runs in train mode (as nn.Dropout): p is greyed out in eval mode, saying why.
  constexpr const char* kDropoutOff = "dropout only runs in train mode: tick train mode to use p";
  ImGui::BeginDisabled(!s.train);
  WidgetRects& rects = state.script.layout;
  changed |= ui::sliderFloat(rects, "dropout_slider", "dropout p", &s.dropout, 0.0f, 0.95f, "%.2f", kClamp);
  ImGui::EndDisabled();
  if (!s.train && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", kDropoutOff);
  changed |= ui::checkbox(rects, "train_mode", "train mode", &s.train);
  if (!s.train) {
    ImGui::SameLine();
    ui::text(rects, "dropout_reason", ui::disabledText(), "(eval: no dropout)");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kDropoutOff);
  }
  return changed;
}

// The K/V head counts that divide H, for the kv heads slider.
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t g = 1; g <= n; ++g)
    if (n % g == 0) out.push_back(g);
  return out;
}

void variantTooltip(Variant variant) {
  if (!ImGui::IsItemHovered()) return;
  const VariantInfo& info = variantInfo(variant);
  ImGui::SetTooltip("%s\n%s", info.description, info.reference);
}

// Beside a model's greyed RoPE checkbox: the focused layer's rotated features, or no positions.
void ropeLayerNote(AppState& state, const LayerFacts& layer) {
  const long long l = static_cast<long long>(state.view.focus.layer);
  ImGui::SameLine();
  if (layer.positions == LayerPositions::Rope) {
    ui::text(state.script.layout, "rope_layer_note", ui::disabledText(), "layer %lld: %lld of %lld features rotate", l,
             static_cast<long long>(layer.rotary_dims), static_cast<long long>(layer.head_dim));
  } else {
    ui::text(state.script.layout, "rope_layer_note", ui::disabledText(), "layer %lld: %s", l,
             layer.positions == LayerPositions::NoPe ? "no positions (NoPE)" : "positions added to the embeddings");
  }
}

// GQA/MQA, RoPE, ALiBi and soft-capping (sinks are a mask term, above).
bool drawVariantsSection(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  // Folded until used, so the sections below keep their place.
  // A model's: open on its layer's variants whatever the sandbox left (greyed, it cannot be toggled).
  const bool trained = s.source == InputSource::Model;
  ImGui::SetNextItemOpen(s.kv_heads > 0 || s.rope || s.alibi || s.softcap > 0.0f, trained ? ImGuiCond_Always : ImGuiCond_Once);
  WidgetRects& rects = state.script.layout;
  // The whole title while it fits the panel (the ID stays the same).
  const bool fits = ImGui::CalcTextSize("Variants: GQA, RoPE, ALiBi, soft-cap").x + 3 * ImGui::GetFrameHeight() <=
                    ImGui::GetContentRegionAvail().x;
  const bool open = ui::collapsingHeader(
      rects, "variants_header", fits ? "Variants: GQA, RoPE, ALiBi, soft-cap###variants" : "Variants###variants");
  // kv heads: a divisor of H; 0 in the settings means G = H.
  const std::vector<int64_t> choices = divisors(s.heads);
  if (s.kv_heads > 0 && s.heads % s.kv_heads != 0) {  // H changed under it: the nearest G below
    const int64_t below = *(std::upper_bound(choices.begin(), choices.end(), s.kv_heads) - 1);
    s.kv_heads = below == s.heads ? 0 : below;
    changed = true;
  }
  if (!open) return changed;
  const int64_t G = s.kv_heads > 0 && s.heads % s.kv_heads == 0 ? s.kv_heads : s.heads;
  int index = static_cast<int>(std::find(choices.begin(), choices.end(), G) - choices.begin());
  char label[48];
  std::snprintf(label, sizeof label, "%lld%s", static_cast<long long>(G),
                G == 1 ? " (MQA)" : G == s.heads ? " (MHA)" : " (GQA)");
  if (ui::sliderInt(rects, "kv_heads_slider", "K/V heads G", &index, 0, static_cast<int>(choices.size()) - 1, label,
                    kClamp)) {
    const int64_t chosen = choices[std::clamp<int>(index, 0, static_cast<int>(choices.size()) - 1)];
    s.kv_heads = chosen == s.heads ? 0 : chosen;
    changed = true;
  }
  variantTooltip(Variant::GroupedQuery);

  changed |= ui::checkbox(rects, "rope_checkbox", "RoPE", &s.rope);
  variantTooltip(Variant::Rope);
  if (const LayerFacts* layer = trained ? focusedLayerFacts(state) : nullptr) ropeLayerNote(state, *layer);
  if (s.rope) {
    ImGui::SameLine();
    const char* styles[] = {"rotate-half (LLaMA)", "interleaved (GPT-J)"};
    ImGui::SetNextItemWidth(-1);
    changed |= enumCombo(rects, "rope_style_combo", "##rope_style", s.rope_style, styles);
    changed |= ImGui::SliderFloat("RoPE base", &s.rope_base, 100.0f, 1000000.0f, "%.0f",
                                  kClamp | ImGuiSliderFlags_Logarithmic);
    // How the score between two fixed vectors decays with relative distance, for the head
    // size of the latest result (a bundle's d comes from its weights), else the settings'.
    const AttentionTrace* trace = state.compute.trace();
    const int64_t head_dim = trace ? trace->d : s.head_dim;
    const int64_t d = std::max<int64_t>(head_dim - head_dim % 2, 2);
    const std::vector<float>& decay = ropeDecayCurve(state.feature<RopeDecayCurve>(), d, s.rope_base, s.rope_style);
    ui::plotLines(rects, "rope_decay_plot", "##rope_decay", decay.data(), static_cast<int>(decay.size()),
                  "RoPE score vs distance 0..256", -1.0f, 1.0f,
                  ImVec2(ImGui::GetContentRegionAvail().x, ImGui::GetTextLineHeight() * 4.0f));
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("<R_m u, R_0 u> / d for u = ones(d), d = %lld: the score of one fixed pair of vectors\n"
                        "as their relative distance m grows (RoFormer, 3.4.3)", static_cast<long long>(d));
    }
  }
  changed |= ui::checkbox(rects, "alibi_checkbox", "ALiBi", &s.alibi);
  variantTooltip(Variant::Alibi);
  sameLineIfFits(checkboxWidth("soft-cap") + 60.0f);
  bool capped = s.softcap > 0.0f;
  if (ui::checkbox(rects, "softcap_checkbox", "soft-cap", &capped)) {
    s.softcap = capped ? 5.0f : 0.0f;
    changed = true;
  }
  variantTooltip(Variant::SoftCap);
  if (capped) {
    changed |= ImGui::SliderFloat("cap", &s.softcap, 0.1f, 100.0f, "%.2f", kClamp | ImGuiSliderFlags_Logarithmic);
  }
  return changed;
}

bool drawViewSection(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  sectionHeader("View");
  WidgetRects& rects = state.script.layout;
  if (ui::Combo combo(rects, "colormap_combo", "colours", colormapName(s.prob_colormap)); combo) {
    for (Colormap map : allColormaps()) {
      const bool picked =
          ui::selectable(rects, std::string("colormap_item_") + colormapName(map), colormapName(map), map == s.prob_colormap);
      if (picked && map != s.prob_colormap) {
        s.prob_colormap = map;
        changed = true;
      }
    }
  }
  changed |= ImGui::Checkbox("log scale", &s.log_scale);
  sameLineIfFits(checkboxWidth("folded [B*H,L,d]"));
  changed |= ImGui::Checkbox("folded [B*H,L,d]", &s.folded_layout);
  return changed;
}

// Seed 000's and 003's mistakes, run on purpose: the maps show what the bug does.
bool drawTeachingSection(AppState& state) {
  Settings& s = state.settings;
  bool changed = false;
  sectionHeader("Teaching: common mistake");
  ImGui::SetNextItemWidth(-1);
  if (ui::Combo combo(state.script.layout, "mistake_combo", "##mistake",
                      s.mistake == Mistake::None ? "none (correct attention)" : mistakeName(s.mistake));
      combo) {
    for (Mistake mistake : allMistakes()) {
      if (ImGui::Selectable(mistake == Mistake::None ? "none (correct attention)" : mistakeName(mistake),
                            mistake == s.mistake) &&
          mistake != s.mistake) {
        s.mistake = mistake;
        changed = true;
      }
      if (ImGui::IsItemHovered() && mistake != Mistake::None)
        ImGui::SetTooltip("%s\nfrom %s", mistakeEffect(mistake), mistakeSource(mistake));
    }
  }
  if (s.mistake != Mistake::None) {
    warningText(mistakeEffect(s.mistake));  // the seed listing it comes from: a tooltip
    state.script.layout.recordText("mistake_note", mistakeEffect(s.mistake));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("from %s", mistakeSource(s.mistake));
    warningText(std::string("fix: ") + mistakeFix(s.mistake));
  }
  return changed;
}

bool drawExportSection(AppState& state, const KnownSizes& sizes) {
  Settings& s = state.settings;
  bool changed = false;
  sectionHeader("Export");
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("to");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  changed |=
      ui::inputTextWithHint(state.script.layout, "export_folder", "##export_dir", defaultExportDir().c_str(), &s.export_dir);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("export folder (created when missing)");
  const std::vector<std::string> formats = exportFormatNames();
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) sameLineIfFits(checkboxWidth(formats[i].c_str()));
    auto chosen = std::find(s.export_formats.begin(), s.export_formats.end(), formats[i]);
    bool on = chosen != s.export_formats.end();
    if (ImGui::Checkbox(formats[i].c_str(), &on)) {
      if (on) s.export_formats.push_back(formats[i]);
      else s.export_formats.erase(chosen);
      changed = true;
    }
  }
  bool auto_cells = s.cell_px == 0;
  if (ImGui::Checkbox("auto cell size", &auto_cells)) {
    s.cell_px = auto_cells ? 0 : defaultCellPx(sizes.L, sizes.S, 1);
    changed = true;
  }
  if (auto_cells) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%lld px)", static_cast<long long>(defaultCellPx(sizes.L, sizes.S, 1)));
  } else {
    changed |= sliderInt64("px per cell", &s.cell_px, 1, 64);
  }
  // Buttons side by side while they fit; the shortcuts are in their tooltips.
  auto button = [&](const std::string& label, const char* tip, const char* layout_name, bool first) {
    const float width = ImGui::CalcTextSize(label.c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
    if (!first) sameLineIfFits(width);
    const bool pressed = ui::button(state.script.layout, layout_name, label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    return pressed;
  };
  if (button(std::string("Export ") + mapKindName(state.view.map_kind),
             "Ctrl+S: the selected heatmap (click a map to select it)", "export_view_button", true)) {
    requestFigureExport(state.exports, state.view, "view");
  }
  if (button("All heads", "Ctrl+Shift+S: every head in one grid figure", "export_grid_button", false)) {
    requestFigureExport(state.exports, state.view, "grid");
  }
  sameLineIfFits(checkboxWidth("full resolution"));
  if (ui::checkbox(state.script.layout, "export_full_resolution", "full resolution", &state.exports.full_resolution_atlas))
    markStateChanged(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("All heads: every cell of every map; without it the grid figure is at most %lld px on its "
                      "longer side, cells pooled (the largest of each block) beyond, as its subtitle says",
                      static_cast<long long>(kMaxAtlasSide));
  if (button("Export HTML", "Ctrl+Shift+H: every layer and head as one interactive page that opens in any browser",
             "export_html_button", false)) {
    requestFigureExport(state.exports, state.view, "html");
  }
  if (button("Screenshot", "Ctrl+Alt+S: the whole window as a PNG", "screenshot_button", false)) {
    state.exports.screenshot_requested = true;
  }
  return changed;
}

// The run's error goes under the section the user last edited (at the top before any
// edit): above it, it would push the control just changed down, off screen.
struct ErrorPlacement {
  AppState& state;
  int section = 0;
  bool drawn = false;
  // After each section: notes an edit and draws the error when it belongs here.
  bool after(bool edited) {
    if (edited) state.drafts.edited_section = section;
    if (section++ == state.drafts.edited_section) draw();
    return edited;
  }
  void draw() {
    if (drawn || state.compute.error().empty() || state.compute.textTooLong()) return;  // too long: under the text box
    errorText(state.script.layout, "control_error", state.compute.error());
    drawn = true;
  }
};

// Model, mask, scaling, variants and mistakes. A trained model fixes its own heads,
// mask and scale: greyed out with the reason, they show the model's values (the user's
// come back after).
bool drawSandboxSections(AppState& state, const KnownSizes& sizes, ErrorPlacement& error) {
  const bool trained = state.settings.source == InputSource::Model;
  constexpr const char* kReason = "a trained model fixes its heads, sizes, mask and scaling: pick the "
                                  "random-weights sandbox under Models to change them";
  if (trained) {
    ImGui::Spacing();
    warningText(state.script.layout, "imported_reason", kReason);
    ImGui::BeginDisabled();
    ImGui::BeginGroup();
  }
  const Settings user = state.settings;
  state.settings = controlsShown(state);
  bool changed = error.after(drawModelSection(state));
  changed |= error.after(drawMaskSection(state, sizes));
  changed |= error.after(drawScalingSection(state));
  changed |= error.after(drawVariantsSection(state));
  changed |= error.after(drawTeachingSection(state));
  if (trained) {
    state.settings = user;
    ImGui::EndGroup();
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", kReason);
  }
  return changed;
}

}  // namespace

void drawControlPanel(AppState& state) {
  if (beginPanelWindow(state, "Controls", "controls")) {
    ImGui::PushItemWidth(-ImGui::GetContentRegionAvail().x * 0.42f);
    ErrorPlacement error{state};
    if (state.drafts.edited_section < 0) error.draw();
    const KnownSizes sizes = knownSizes(state);
    bool changed = error.after(drawModelsSection(state));
    changed |= error.after(drawInputSection(state, sizes));
    if (state.settings.source == InputSource::Model) drawPanelParts(state, "controls");  // Generate
    if (state.compute.imported() && state.settings.source == InputSource::Bundle) {
      // Imported maps were computed elsewhere: no sandbox control applies, none is drawn.
      ImGui::Spacing();
      ui::text(state.script.layout, "imported_reason",
               ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
               "imported attention maps: the model, mask, scaling and mistakes controls need the model "
               "that computed them, so they are not shown");
    } else {
      changed |= drawSandboxSections(state, sizes, error);
    }
    changed |= error.after(drawViewSection(state));
    changed |= error.after(drawExportSection(state, sizes));
    ImGui::PopItemWidth();
    if (changed) settingsEdited(state);
  }
  ImGui::End();
}

}  // namespace attnscope
