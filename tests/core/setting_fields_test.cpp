// The settings' recompute trigger, declared beside Settings (settingFields): every setting
// the settings JSON holds is classified, and computeSettingsDiffer recomputes exactly when a
// compute-relevant setting of the current source (and scale) changes.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "config/settings.h"

namespace attnscope {
namespace {

TEST(SettingFields, EverySavedSettingIsClassified) {
  std::set<std::string> rows;
  for (const SettingField& field : settingFields()) EXPECT_TRUE(rows.insert(field.name).second) << field.name;
  std::set<std::string> saved;
  const nlohmann::json json = settingsToJson(Settings());
  for (const auto& item : json.items()) saved.insert(item.key());
  for (const char* focus : {"focused_layer", "focused_head", "batch_item"}) saved.erase(focus);  // ViewFocus
  EXPECT_EQ(rows, saved);
}

TEST(SettingFields, EachRowComparesItsOwnSetting) {
  const Settings a;
  for (const SettingField& field : settingFields()) EXPECT_FALSE(field.differ(a, a)) << field.name;
  Settings b;
  b.log_scale = true;
  for (const SettingField& field : settingFields())
    EXPECT_EQ(field.differ(a, b), std::string(field.name) == "log_scale") << field.name;
}

struct RecomputeCase {
  const char* name;
  InputSource source;
  std::function<void(Settings&)> before;  // on both a and b
  std::function<void(Settings&)> change;  // on b only
  bool recomputes;
};

TEST(SettingFields, RecomputeOnlyForWhatTheSourceAndScaleUse) {
  const auto none = [](Settings&) {};
  const RecomputeCase cases[] = {
      {"colormap", InputSource::Text, none, [](Settings& s) { s.prob_colormap = Colormap::Magma; }, false},
      {"export formats", InputSource::Text, none, [](Settings& s) { s.export_formats = {"svg"}; }, false},
      {"heads", InputSource::Model, none, [](Settings& s) { s.heads = 8; }, true},
      {"mask", InputSource::Bundle, none, [](Settings& s) { s.mask.causal = true; }, true},
      {"source", InputSource::Text, none, [](Settings& s) { s.source = InputSource::Synthetic; }, true},
      {"text on text", InputSource::Text, none, [](Settings& s) { s.text = "a b"; }, true},
      {"text on model", InputSource::Model, none, [](Settings& s) { s.text = "a b"; }, false},
      {"key text without cross", InputSource::Text, none, [](Settings& s) { s.key_text = "x"; }, false},
      {"key text with cross", InputSource::Text, [](Settings& s) { s.cross_attention = true; },
       [](Settings& s) { s.key_text = "x"; }, true},
      {"key text on synthetic", InputSource::Synthetic, [](Settings& s) { s.cross_attention = true; },
       [](Settings& s) { s.key_text = "x"; }, false},
      {"batch on synthetic", InputSource::Synthetic, none, [](Settings& s) { s.batch = 3; }, true},
      {"batch on text", InputSource::Text, none, [](Settings& s) { s.batch = 3; }, false},
      {"head_dim on bundle", InputSource::Bundle, none, [](Settings& s) { s.head_dim = 8; }, true},
      {"head_dim on model", InputSource::Model, none, [](Settings& s) { s.head_dim = 8; }, false},
      {"positional encoding on synthetic", InputSource::Synthetic, none,
       [](Settings& s) { s.positional_encoding = false; }, false},
      {"model text on model", InputSource::Model, none, [](Settings& s) { s.model_text = "x"; }, true},
      {"temperature, default scale", InputSource::Text, none, [](Settings& s) { s.temperature = 2.0f; }, false},
      {"temperature, temperature scale", InputSource::Text, [](Settings& s) { s.scale = ScaleChoice::Temperature; },
       [](Settings& s) { s.temperature = 2.0f; }, true},
      {"factor, factor scale", InputSource::Synthetic, [](Settings& s) { s.scale = ScaleChoice::Factor; },
       [](Settings& s) { s.scale_factor = 0.5f; }, true},
      {"factor, temperature scale", InputSource::Synthetic, [](Settings& s) { s.scale = ScaleChoice::Temperature; },
       [](Settings& s) { s.scale_factor = 0.5f; }, false},
  };
  for (const RecomputeCase& c : cases) {
    Settings a;
    a.source = c.source;
    c.before(a);
    Settings b = a;
    c.change(b);
    EXPECT_EQ(computeSettingsDiffer(a, b), c.recomputes) << c.name;
    EXPECT_FALSE(computeSettingsDiffer(a, a)) << c.name;
  }
}

}  // namespace
}  // namespace attnscope
