// The control panel (left): every setting of the one Settings struct, the mistakes lab and
// the variants; fields that may hold invalid input are drafts, never written to settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/variants.h"
#include "config/settings.h"

namespace attnscope {

struct AppState;
struct ComputeAsk;
struct LayerFacts;

// The Variants section's RoPE score-vs-distance curve, recomputed only when d, base or
// style change (ropeDecayCurve), never per frame.
struct RopeDecayCurve {
  int64_t d = 0;
  float base = 0.0f;
  RopeStyle style = RopeStyle::RotateHalf;
  std::vector<float> values;  // distances 0..kRopeDecayDistance
};
inline constexpr int64_t kRopeDecayDistance = 256;
const std::vector<float>& ropeDecayCurve(RopeDecayCurve& curve, int64_t d, float base, RopeStyle style);

// The settings the sandbox's controls show: the user's, or under a trained model's run the
// model's own (its heads H, head size d, the focused layer's mask, whether q, k, v have
// biases; no padding, dropout, mistake or variant), greyed out, so that no number on screen
// is the sandbox's.
// Under a model run the focused layer's own head size, K/V heads, window, RoPE base (or no
// RoPE on a NoPE layer) and soft-cap (ViewModel::layer_facts).
Settings controlsShown(const AppState& state);
// The focused layer's facts of a model run shown without error; null otherwise.
const LayerFacts* focusedLayerFacts(const AppState& state);
// Why the sandbox's control `control` ("positional_encoding", "bias", "seed", "head_dim") does
// nothing for the current source, "" when it applies: synthetic inputs and bundles are used
// as they are (no positions added), a bundle brings its own biases, and its weights fix the
// seed's and D's part. The panel draws such a control greyed, with the reason.
std::string unusedControlReason(const AppState& state, const std::string& control);
// A model's text longer than its context: the one message about it, shown under the text
// box ("The model reads at most 128 characters: shorten the text by 9. ..."); "" otherwise.
std::string textTooLongMessage(const AppState& state);
// A text's valid length per batch item as the padding sliders show it: the one set by hand,
// else its line's token count (followed as the text changes); empty for other sources.
std::vector<int64_t> textValidLensShown(const Settings& settings);
// A typed D the heads do not divide holds sandbox runs (a trained model ignores it).
void askControls(const AppState& state, ComputeAsk& ask);
void drawControlPanel(AppState& state);
// valid_lens (the settings', -1 = follows its line), valid_lens_shown (textValidLensShown).
// State-log keys: source, settings_heads, settings_L, mask, colormap, log_scale, folded_layout, mistake, model, model_text, models_listed, recent_models, correct_trace, diff_max, diff_summary,
// text_tokens ([tokens, context] of a model's text, else null), text_too_long_message,
// dropout (p), train, controls_shown (heads, head_dim, mask the control panel shows),
// controls_layer (a model run: the focused layer's layer, head_dim, kv_heads, positional_encoding,
// rope, rope_base, window, softcap as the greyed controls show them; else null),
// controls_unused ({control: reason} of the sandbox controls the source does not read).
void controlsToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
