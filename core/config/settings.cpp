// Name tables of the settings' enums (the one place their names live) and the attention
// options the settings describe.
#include "config/settings.h"

#include <cmath>
#include <cstdlib>
#include <iterator>

namespace attnscope {
namespace {

struct SourceRow {
  InputSource source;
  const char* name;
};
constexpr SourceRow kSources[] = {
    {InputSource::Text, "text"},
    {InputSource::Synthetic, "synthetic"},
    {InputSource::Bundle, "bundle"},
    {InputSource::Model, "model"},
};

struct ScaleRow {
  ScaleChoice choice;
  const char* name;   // settings JSON
  const char* label;  // the app's combo
};
constexpr ScaleRow kScales[] = {
    {ScaleChoice::InvSqrtD, "inv_sqrt_d", "1 / sqrt(d)"},
    {ScaleChoice::None, "none", "none"},
    {ScaleChoice::Temperature, "temperature", "1 / (T sqrt(d))"},
    {ScaleChoice::Factor, "factor", "fixed factor"},
};

}  // namespace

const NameTable<InputSource>& inputSourceNames() {
  static const NameTable<InputSource> table("source", kSources, &SourceRow::source, &SourceRow::name);
  return table;
}

const char* inputSourceName(InputSource source) { return inputSourceNames().name(source); }

const NameTable<ScaleChoice>& scaleChoiceNames() {
  static const NameTable<ScaleChoice> table("scale", kScales, &ScaleRow::choice, &ScaleRow::name);
  return table;
}

std::vector<ScaleChoice> allScaleChoices() { return scaleChoiceNames().values(); }

const char* scaleChoiceName(ScaleChoice choice) { return scaleChoiceNames().name(choice); }

const char* scaleChoiceLabel(ScaleChoice choice) {
  for (const ScaleRow& row : kScales)
    if (row.choice == choice) return row.label;
  return "";
}

namespace {

template <auto Member>
bool differs(const Settings& a, const Settings& b) {
  return !(a.*Member == b.*Member);
}

bool always(const Settings&) { return true; }
template <InputSource... Sources>
bool forSources(const Settings& a) {
  return ((a.source == Sources) || ...);
}
template <ScaleChoice Choice>
bool withScale(const Settings& a) {
  return a.scale == Choice;
}
bool crossText(const Settings& a) { return a.source == InputSource::Text && a.cross_attention; }

constexpr auto kText = InputSource::Text;
constexpr auto kSynthetic = InputSource::Synthetic;
constexpr auto kBundle = InputSource::Bundle;
constexpr auto kModel = InputSource::Model;

// Bundles without weights get seeded ones of size H * d, hence head_dim for them too.
const SettingField kSettingFields[] = {
    {"source", differs<&Settings::source>, always},
    {"text", differs<&Settings::text>, forSources<kText>},
    {"cross_attention", differs<&Settings::cross_attention>, forSources<kText, kSynthetic>},
    {"key_text", differs<&Settings::key_text>, crossText},
    {"synthetic_L", differs<&Settings::synthetic_L>, forSources<kSynthetic>},
    {"synthetic_S", differs<&Settings::synthetic_S>, forSources<kSynthetic>},
    {"batch", differs<&Settings::batch>, forSources<kSynthetic>},
    {"valid_lens", differs<&Settings::valid_lens>, always},
    {"bundle_path", differs<&Settings::bundle_path>, forSources<kBundle>},
    {"model", differs<&Settings::model>, forSources<kModel>},
    {"model_text", differs<&Settings::model_text>, forSources<kModel>},
    {"model_truncate", differs<&Settings::model_truncate>, forSources<kModel>},
    {"model_ablate", differs<&Settings::model_ablate>, forSources<kModel>},
    {"model_knockout", differs<&Settings::model_knockout>, forSources<kModel>},
    {"patch_corrupt", differs<&Settings::patch_corrupt>, nullptr},
    {"patch_answer", differs<&Settings::patch_answer>, nullptr},
    {"patch_wrong", differs<&Settings::patch_wrong>, nullptr},
    {"heads", differs<&Settings::heads>, always},
    {"head_dim", differs<&Settings::head_dim>, forSources<kText, kSynthetic, kBundle>},
    {"positional_encoding", differs<&Settings::positional_encoding>, forSources<kText>},
    {"bias", differs<&Settings::bias>, forSources<kText, kSynthetic>},
    {"seed", differs<&Settings::seed>, always},
    {"mask", differs<&Settings::mask>, always},
    {"fill", differs<&Settings::fill>, always},
    {"scale", differs<&Settings::scale>, always},
    {"temperature", differs<&Settings::temperature>, withScale<ScaleChoice::Temperature>},
    {"scale_factor", differs<&Settings::scale_factor>, withScale<ScaleChoice::Factor>},
    {"dropout", differs<&Settings::dropout>, always},
    {"train", differs<&Settings::train>, always},
    {"mistake", differs<&Settings::mistake>, always},
    {"kv_heads", differs<&Settings::kv_heads>, always},
    {"rope", differs<&Settings::rope>, always},
    {"rope_base", differs<&Settings::rope_base>, always},
    {"rope_style", differs<&Settings::rope_style>, always},
    {"alibi", differs<&Settings::alibi>, always},
    {"softcap", differs<&Settings::softcap>, always},
    {"prob_colormap", differs<&Settings::prob_colormap>, nullptr},
    {"log_scale", differs<&Settings::log_scale>, nullptr},
    {"folded_layout", differs<&Settings::folded_layout>, nullptr},
    {"export_dir", differs<&Settings::export_dir>, nullptr},
    {"cell_px", differs<&Settings::cell_px>, nullptr},
    {"export_formats", differs<&Settings::export_formats>, nullptr},
};

}  // namespace

const std::vector<SettingField>& settingFields() {
  static const std::vector<SettingField> fields(std::begin(kSettingFields), std::end(kSettingFields));
  return fields;
}

bool computeSettingsDiffer(const Settings& a, const Settings& b) {
  for (const SettingField& field : kSettingFields)
    if (field.recomputes && field.recomputes(a) && field.differ(a, b)) return true;
  return false;
}

std::optional<ScaleSetting> scaleFromFactor(double factor) {
  if (!std::isfinite(factor) || factor <= 0.0) return std::nullopt;
  return ScaleSetting{ScaleChoice::Factor, static_cast<float>(factor)};
}

std::optional<ScaleSetting> scaleFromText(const std::string& text) {
  if (text == "none") return ScaleSetting{ScaleChoice::None, 1.0f};
  if (text == "default" || text == "sqrt") return ScaleSetting{ScaleChoice::InvSqrtD, 1.0f};
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return scaleFromFactor(value);
}

std::vector<std::string> exportFormatNames() { return {"png", "svg", "pdf", "npy", "csv", "html"}; }

AttentionOptions attentionOptions(const Settings& settings) {
  return attentionOptions(settings, settings.modelDim());
}

AttentionOptions attentionOptions(const Settings& settings, int64_t model_dim) {
  if (settings.heads < 1) throw InputError("heads must be >= 1, got H=" + std::to_string(settings.heads));
  AttentionOptions o;
  o.heads = settings.heads;
  o.mask = settings.mask;
  o.fill = settings.fill;
  o.dropout = settings.dropout;
  o.train = settings.train;
  o.seed = settings.seed;
  o.mistake = settings.mistake;
  o.kv_heads = settings.kv_heads;
  o.rope = settings.rope;
  o.rope_base = settings.rope_base;
  o.rope_style = settings.rope_style;
  o.alibi = settings.alibi;
  if (settings.softcap > 0.0f) o.softcap = settings.softcap;
  switch (settings.scale) {
    case ScaleChoice::InvSqrtD: o.scale_mode = ScaleMode::InvSqrtD; break;
    case ScaleChoice::None: o.scale_mode = ScaleMode::None; break;
    case ScaleChoice::Factor:
      if (!scaleFromFactor(settings.scale_factor))
        throw InputError("scale factor must be > 0, got " + std::to_string(settings.scale_factor));
      o.scale_mode = ScaleMode::Custom;
      o.custom_scale = settings.scale_factor;
      break;
    case ScaleChoice::Temperature: {
      if (!(settings.temperature > 0.0f) || !std::isfinite(settings.temperature)) {
        throw InputError("temperature must be > 0, got " + std::to_string(settings.temperature));
      }
      const double d = static_cast<double>(model_dim) / static_cast<double>(settings.heads);
      o.scale_mode = ScaleMode::Custom;
      o.custom_scale = static_cast<float>(1.0 / (settings.temperature * std::sqrt(d)));
      break;
    }
  }
  return o;
}

}  // namespace attnscope
