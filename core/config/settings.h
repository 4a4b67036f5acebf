// The one settings struct: everything a user can set in the app, saved as JSON and
// read back by `attnscope --settings FILE` and `attnscope export --settings FILE`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "attention/attention.h"
#include "model/truncate.h"
#include "registry/name_table.h"
#include "view/colormap.h"

namespace attnscope {

enum class InputSource {
  Text,       // tokens from text (lines = batch items), seeded embeddings + positional encoding
  Synthetic,  // seeded random inputs of any L, S, B (large sizes)
  Bundle,     // a tensor bundle directory of .npy files
  Model,      // a trained model folder (attnscope-model/1) run on model_text
};

enum class ScaleChoice {
  InvSqrtD,     // scores / sqrt(d)
  None,         // no scaling
  Temperature,  // scores / (T sqrt(d))
  Factor,       // scores * scale_factor (bundle.json "scale": 0.5, compute --scale 0.5)
};

// Name tables, the one place each name lives (settings JSON, CLI flags, bundle.json, combos).
const NameTable<InputSource>& inputSourceNames();  // "text", "synthetic", "bundle", "model"
const char* inputSourceName(InputSource source);   // inputSourceNames().name(source)
const NameTable<ScaleChoice>& scaleChoiceNames();  // "inv_sqrt_d", "none", "temperature", "factor"
std::vector<ScaleChoice> allScaleChoices();        // in enum order
const char* scaleChoiceName(ScaleChoice choice);   // scaleChoiceNames().name(choice)
const char* scaleChoiceLabel(ScaleChoice choice);  // "1 / sqrt(d)", ... (the app's combo)

// A scale as `compute --scale` and bundle.json write it: "none", "default" / "sqrt"
// (1/sqrt(d)) or a positive finite factor (ScaleChoice::Factor). nullopt when invalid.
struct ScaleSetting {
  ScaleChoice choice = ScaleChoice::InvSqrtD;
  float factor = 1.0f;  // used by ScaleChoice::Factor
};
std::optional<ScaleSetting> scaleFromText(const std::string& text);
std::optional<ScaleSetting> scaleFromFactor(double factor);

// The app's first text for the default model (python-code): repeated names and brackets
// bring out its previous-token, bracket and induction heads.
inline constexpr const char* kDefaultModelText =
    "def area(width, height):\n    return width * height\n\nprint(area(3, 4), area(width, height))\n";

// A valid_lens entry that follows its item's natural length (a text line's token count,
// else the full S) instead of a length set by hand.
inline constexpr int64_t kFollowValidLen = -1;

struct Settings {
  // input
  InputSource source = InputSource::Text;
  std::string text = "The cat sat on the mat because it was tired";  // one line per batch item
  bool cross_attention = false;                   // text mode: K/V from key_text (L != S)
  std::string key_text = "Le chat est assis sur le tapis";
  int64_t synthetic_L = 12;                       // synthetic mode sizes
  int64_t synthetic_S = 12;
  int64_t batch = 1;                              // synthetic mode batch size
  std::vector<int64_t> valid_lens;                // per batch item; empty or kFollowValidLen = natural length
  std::string bundle_path;
  // trained model (source Model): a shipped model's name (assets/models/NAME) or a folder
  // path (any value with a '/'), run on model_text. See config/model_source.h.
  std::string model = "python-code";
  std::string model_text = kDefaultModelText;
  Truncate model_truncate = Truncate::None;       // a text past the context: refused, or its first / last tokens
  // Interventions on the model's run (model/interventions.h): `--ablate` and `--knockout` specs ("" = none).
  std::string model_ablate, model_knockout;
  // The app's patching view (model/patching.h): the corrupt text beside model_text (the clean
  // one) and the answer and wrong tokens as typed ("" = none chosen yet). Its own job: no recompute.
  std::string patch_corrupt, patch_answer, patch_wrong;

  // model
  int64_t heads = 4;
  int64_t head_dim = 16;                          // D = heads * head_dim (text / synthetic)
  bool positional_encoding = true;
  bool bias = true;
  uint64_t seed = 0;

  // attention
  MaskSpec mask;
  MaskFill fill = MaskFill::NegInf;
  ScaleChoice scale = ScaleChoice::InvSqrtD;
  float temperature = 1.0f;                       // ScaleChoice::Temperature: scores / (T sqrt(d))
  float scale_factor = 1.0f;                      // ScaleChoice::Factor: scores * scale_factor
  float dropout = 0.0f;
  bool train = false;
  Mistake mistake = Mistake::None;                // mistakes lab (JSON "mistake": mistakeName)

  // variants (attention/variants.h); attention sinks are the mask term sinks:K
  int64_t kv_heads = 0;                           // G K/V heads (GQA, 1 = MQA); 0 = G = heads
  bool rope = false;                              // rotary position embeddings on q and k
  float rope_base = 10000.0f;
  RopeStyle rope_style = RopeStyle::RotateHalf;   // JSON "half" / "interleaved"
  bool alibi = false;
  float softcap = 0.0f;                           // > 0: cap * tanh(s / cap); 0 = off (JSON null)

  // view preferences (which map is focused is a ViewFocus, not a setting)
  Colormap prob_colormap = Colormap::Viridis;
  bool log_scale = false;
  bool folded_layout = false;

  // export
  std::string export_dir;                         // empty = ~/Pictures/attnscope
  int64_t cell_px = 0;                            // 0 = auto (matrix >= 512 px)
  std::vector<std::string> export_formats = {"png"};  // subset of exportFormatNames()

  int64_t modelDim() const { return heads * head_dim; }
};

// What a change of each setting calls for, declared here beside Settings so that a new
// setting is not forgotten (settings_test checks that every key settingsToJson writes has
// a row): a recompute of the maps (always, for some sources or under a condition), or only
// a redraw (view preferences, export options).
struct SettingField {
  const char* name;  // its settings JSON key
  bool (*differ)(const Settings& a, const Settings& b);
  // Whether a change of it recomputes, given the settings `a`; null: never (view only).
  bool (*recomputes)(const Settings& a);
};
const std::vector<SettingField>& settingFields();  // in the order of Settings' members

// True when a and b differ in a setting that recomputes for a (its source, its scale):
// the app recomputes then (view-only fields such as colormap and log scale do not count).
bool computeSettingsDiffer(const Settings& a, const Settings& b);

// Which map the views show. Not a setting: the app owns it (clamped to each result, never
// written back into Settings), but it is saved in the settings JSON beside the settings
// ("focused_layer", "focused_head", "batch_item") so that an export's JSON reopens the
// exported map and older settings files keep loading.
struct ViewFocus {
  int64_t layer = 0;
  int64_t head = 0;
  int64_t batch_item = 0;
  bool operator==(const ViewFocus& o) const { return layer == o.layer && head == o.head && batch_item == o.batch_item; }
  bool operator!=(const ViewFocus& o) const { return !(*this == o); }
};

// Every figure format the exporter writes, in the order the app lists them.
std::vector<std::string> exportFormatNames();  // {"png", "svg", "pdf", "npy", "csv", "html"}

// Settings as JSON (config/settings_json.cpp).
nlohmann::json settingsToJson(const Settings& settings, const ViewFocus& focus = {});
// Unknown keys are ignored; wrong types or values throw InputError naming the key, or,
// with a problems list, keep that key's default and add one line per bad key to it.
Settings settingsFromJson(const nlohmann::json& json, std::vector<std::string>* problems = nullptr);
ViewFocus viewFocusFromJson(const nlohmann::json& json, std::vector<std::string>* problems = nullptr);  // the same rules
// InputError naming the file on a bad file; the focus saved in it goes to *focus when given.
Settings loadSettingsFile(const std::string& path, ViewFocus* focus = nullptr);
void saveSettingsFile(const Settings& settings, const std::string& path, const ViewFocus& focus = {});  // atomic

// The app's own settings file at start-up: never fatal, never lost. A file that cannot be
// read or holds a bad value is renamed to PATH.bad-YYYYMMDD-HHMMSS (a free name: never
// overwriting another) and the settings keep every valid key of it.
struct RecoveredSettings {
  Settings settings;
  ViewFocus focus;
  std::string notice;    // one line for the user; "" when the file was fine or absent
  std::string moved_to;  // where the bad file went; "" when it was not moved
};
RecoveredSettings recoverSettingsFile(const std::string& path);

// Temperature scale = 1 / (T sqrt(d)) with d = model_dim / heads. The one-argument form
// uses settings.modelDim(); pass the real D for bundles (D comes from their weights).
// Throws InputError when temperature <= 0 or heads < 1.
AttentionOptions attentionOptions(const Settings& settings);
AttentionOptions attentionOptions(const Settings& settings, int64_t model_dim);

// Builds the attention inputs the settings describe (text, synthetic or bundle; one file
// per source, see config/inputs.h). Throws InputError for bad settings (no tokens, too
// large, bad bundle, ...). A whole run (inputs + options): configureRun() in config/run.h.
AttentionInputs buildInputs(const Settings& settings);

// The token count of each text batch item's key line (its natural valid length, which the
// padding mask follows until a length is set by hand); empty when the text has no tokens
// or its key lines do not match.
std::vector<int64_t> textKeyLengths(const Settings& settings);

}  // namespace attnscope
