// Name tables of the settings' enums (the one place their names live) and the attention
// options the settings describe.
#include "config/settings.h"

#include <cmath>
#include <cstdlib>

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

std::vector<std::string> exportFormatNames() { return {"png", "svg", "pdf", "npy", "csv"}; }

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
