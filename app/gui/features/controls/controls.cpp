#include "gui/features/controls/controls.h"

#include <algorithm>
#include <cstdio>

#include "gui/shell/app_state.h"

namespace attnscope {

const std::vector<float>& ropeDecayCurve(RopeDecayCurve& curve, int64_t d, float base, RopeStyle style) {
  if (curve.values.empty() || curve.d != d || curve.base != base || curve.style != style) {
    curve.d = d, curve.base = base, curve.style = style;
    curve.values = ropeScoreDecay(d, base, style, kRopeDecayDistance);
  }
  return curve.values;
}

Settings controlsShown(const AppState& state) {
  const InputFacts& f = state.compute.facts;
  if (state.settings.source != InputSource::Model || !f.known || f.H <= 0) return state.settings;
  Settings shown;  // the sandbox's defaults: no padding, dropout, mistake or variant
  shown.source = state.settings.source;
  shown.heads = f.H;
  shown.head_dim = f.D_q / f.H;
  shown.bias = f.qkv_bias;
  shown.positional_encoding = true;  // learned, sinusoidal or rotary: every model has positions
  // The focused layer's own mask: BERT's none, Mistral's window, Gemma 2's alternating layers.
  shown.mask = MaskSpec::parse("causal");
  const ViewModel* v = state.compute.view.get();
  if (v && !v->maps.empty()) {
    const std::string& name = v->maps[std::clamp<int64_t>(state.view.focus.layer, 0, static_cast<int64_t>(v->maps.size()) - 1)].mask_name;
    try {
      if (!name.empty()) shown.mask = MaskSpec::parse(name);
    } catch (const InputError&) {  // a name no control can show (a tiled view's): the run's causal mask
    }
  }
  // The focused layer's own head size, K/V heads, positions (its RoPE base; none on a NoPE
  // layer) and soft-cap.
  if (const LayerFacts* layer = focusedLayerFacts(state)) {
    shown.head_dim = layer->head_dim;
    shown.kv_heads = layer->kv_heads == layer->heads ? 0 : layer->kv_heads;
    shown.positional_encoding = layer->positions == LayerPositions::Added;
    shown.rope = layer->positions == LayerPositions::Rope;
    if (shown.rope) shown.rope_base = static_cast<float>(layer->rope_base);
    shown.softcap = layer->softcap ? static_cast<float>(*layer->softcap) : 0.0f;
  }
  return shown;
}

const LayerFacts* focusedLayerFacts(const AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (state.settings.source != InputSource::Model || !v || v->layer_facts.empty() || !state.compute.error().empty())
    return nullptr;
  return &v->layer_facts[std::clamp<int64_t>(state.view.focus.layer, 0, static_cast<int64_t>(v->layer_facts.size()) - 1)];
}

namespace {

// Which sandbox inputs a source reads (a trained model greys every sandbox section itself).
bool textOnly(const Settings& s, const InputFacts&) { return s.source == InputSource::Text; }
bool seededInputs(const Settings& s, const InputFacts&) { return s.source != InputSource::Bundle; }
bool seededWeights(const Settings& s, const InputFacts& f) { return s.source != InputSource::Bundle || f.seeded_weights; }

struct ControlUse {
  const char* control;
  bool (*used)(const Settings&, const InputFacts&);
  const char* reason;
};
constexpr ControlUse kControlUses[] = {
    {"positional_encoding", textOnly, "only a text's token embeddings get positions: synthetic and bundle inputs are used as they are"},
    {"bias", seededInputs, "a bundle brings its own biases (b_q.npy ...) or none"},
    {"seed", seededWeights, "the bundle's own inputs and weights: nothing is seeded"},
    {"head_dim", seededWeights, "the bundle's weights fix D = H*d"},
};

}  // namespace

std::string unusedControlReason(const AppState& state, const std::string& control) {
  const Settings& s = state.settings;
  if (s.source == InputSource::Model) return "";
  for (const ControlUse& use : kControlUses)
    if (control == use.control && !use.used(s, state.compute.facts)) return use.reason;
  return "";
}

std::vector<int64_t> textValidLensShown(const Settings& settings) {
  if (settings.source != InputSource::Text) return {};
  std::vector<int64_t> lens = textKeyLengths(settings);
  const int64_t S = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  for (size_t b = 0; b < lens.size() && b < settings.valid_lens.size(); ++b)
    if (settings.valid_lens[b] != kFollowValidLen) lens[b] = std::clamp<int64_t>(settings.valid_lens[b], 0, S);
  return lens;
}

std::string textTooLongMessage(const AppState& state) {
  const InputFacts& f = state.compute.facts;
  if (!state.compute.textTooLong()) return "";
  std::string message = "The model reads at most " + std::to_string(f.context) + " " + f.token_unit +
                        ": shorten the text by " + (f.text_more ? "more than " : "") +
                        std::to_string(f.text_tokens - f.context) + ", or use its first or last " +
                        std::to_string(f.context) + ".";
  if (state.compute.mapsStale()) message += " The dimmed maps show the last text that fit.";
  return message;
}

void askControls(const AppState& state, ComputeAsk& ask) {
  ask.hold = !state.drafts.control_error.empty() && state.settings.source != InputSource::Model;
}

void controlsToJson(const AppState& state, nlohmann::json& line) {
  const Settings& s = state.settings;
  line["source"] = inputSourceName(s.source);
  line["settings_heads"] = s.heads;
  line["settings_L"] = s.synthetic_L;  // synthetic source
  line["mask"] = s.mask.toString();
  line["colormap"] = colormapName(s.prob_colormap);
  line["log_scale"] = s.log_scale;
  line["folded_layout"] = s.folded_layout;
  line["mistake"] = mistakeName(s.mistake);
  const Settings shown = controlsShown(state);  // what the (greyed) controls show
  line["controls_shown"] = {{"heads", shown.heads}, {"head_dim", shown.head_dim}, {"mask", shown.mask.toString()},
                            {"bias", shown.bias}};
  line["controls_layer"] = nullptr;  // a model run: the focused layer's values the greyed controls show
  if (const LayerFacts* layer = focusedLayerFacts(state)) {
    line["controls_layer"] = {{"layer", state.view.focus.layer},      {"head_dim", shown.head_dim},
                              {"kv_heads", shown.kv_heads},           {"positional_encoding", shown.positional_encoding},
                              {"rope", shown.rope},                   {"rope_base", shown.rope ? nlohmann::json(shown.rope_base) : nlohmann::json(nullptr)},
                              {"window", layer->window},              {"softcap", shown.softcap}};
  }
  line["controls_unused"] = nlohmann::json::object();
  for (const ControlUse& use : kControlUses)
    if (const std::string why = unusedControlReason(state, use.control); !why.empty()) line["controls_unused"][use.control] = why;
  line["valid_lens"] = s.valid_lens;
  line["valid_lens_shown"] = textValidLensShown(s);
  line["dropout"] = s.dropout;
  line["train"] = s.train;
  if (s.source == InputSource::Model) {
    line["model"] = s.model;
    line["model_text"] = s.model_text;
    line["model_truncate"] = truncateNames().name(s.model_truncate);
  }
  const InputFacts& f = state.compute.facts;
  line["text_tokens"] = nullptr;  // a model's text: [tokens, context] of the latest job
  if (f.context > 0) line["text_tokens"] = {f.text_tokens, f.context};
  line["text_more"] = f.text_more;  // the text has more tokens than text_tokens says
  line["text_cut"] = f.text_cut;    // the run read the first or last context's worth (model_truncate)
  line["text_too_long_message"] = textTooLongMessage(state);
  line["models_listed"] = nlohmann::json::array();
  for (const ShippedModel& m : state.ui.shipped_models) line["models_listed"].push_back(m.name);
  line["recent_models"] = state.view.recent_models;  // the Models choice's folders, newest first
  line["correct_trace"] = state.compute.correctView() != nullptr;
  line["diff_max"] = nullptr;  // focused head, batch item: max |buggy - correct| probability
  if (const float diff = focusedDiffMax(state); diff >= 0.0f) line["diff_max"] = diff;
  line["diff_summary"] = mistakeDiffSummary(state);
}

}  // namespace attnscope
