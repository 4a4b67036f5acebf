// The variant settings: settings JSON keys, bundle.json keys (applyBundleRunKeys), the
// mapping into AttentionOptions and the GQA pooling of seeded weights.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/run.h"
#include "config/settings.h"
#include "config/text_input.h"

namespace attnscope {
namespace {

using nlohmann::json;

TEST(VariantSettings, JsonRoundTripAndOptions) {
  Settings s;
  s.heads = 8;
  s.kv_heads = 2;
  s.rope = true;
  s.rope_base = 500000.0f;
  s.rope_style = RopeStyle::Interleaved;
  s.alibi = true;
  s.softcap = 50.0f;
  s.mask = MaskSpec::parse("causal-window:8+sinks:4");
  const json j = settingsToJson(s);
  EXPECT_EQ(j["kv_heads"], 2);
  EXPECT_EQ(j["rope_style"], "interleaved");
  EXPECT_EQ(j["softcap"], 50.0);
  EXPECT_EQ(j["mask"], "causal-window:8+sinks:4");
  const Settings back = settingsFromJson(j);
  EXPECT_EQ(settingsToJson(back), j);
  const AttentionOptions o = attentionOptions(back);
  EXPECT_EQ(o.kv_heads, 2);
  EXPECT_TRUE(o.rope);
  EXPECT_DOUBLE_EQ(o.rope_base, 500000.0);
  EXPECT_EQ(o.rope_style, RopeStyle::Interleaved);
  EXPECT_TRUE(o.alibi);
  ASSERT_TRUE(o.softcap.has_value());
  EXPECT_EQ(*o.softcap, 50.0f);
  EXPECT_EQ(o.mask.sinks, 4);

  Settings off;
  EXPECT_TRUE(settingsToJson(off)["softcap"].is_null());
  EXPECT_FALSE(attentionOptions(settingsFromJson(settingsToJson(off))).softcap.has_value());
}

TEST(VariantSettings, BadSettingsValuesNameTheKey) {
  const std::pair<json, const char*> cases[] = {
      {{{"kv_heads", -1}}, "'kv_heads' must be in [0, 4096]"},
      {{{"rope_style", "spiral"}}, "'rope_style' is invalid"},
      {{{"rope_base", 1.0}}, "'rope_base' must be > 1"},
      {{{"softcap", -2}}, "'softcap' must be > 0"},
      {{{"alibi", "yes"}}, "'alibi' must be true or false"},
      {{{"mask", "causal+sinks:2"}}, "sinks:2 needs a window term"},
  };
  for (const auto& [j, message] : cases) {
    try {
      settingsFromJson(j);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST(VariantSettings, BundleJsonKeys) {
  Settings s = bundleDefaults();
  s.mask = MaskSpec::parse("causal-window:4");
  applyBundleRunKeys(json{{"kv_heads", 2}, {"rope", 1000}, {"rope_style", "interleaved"}, {"alibi", true},
                          {"softcap", 20}, {"sinks", 3}},
                     "b/bundle.json", s);
  const AttentionOptions o = attentionOptions(s, 16);
  EXPECT_EQ(o.kv_heads, 2);
  EXPECT_TRUE(o.rope);
  EXPECT_DOUBLE_EQ(o.rope_base, 1000.0);
  EXPECT_EQ(o.rope_style, RopeStyle::Interleaved);
  EXPECT_TRUE(o.alibi);
  EXPECT_EQ(*o.softcap, 20.0f);
  EXPECT_EQ(o.mask.sinks, 3);
  Settings plain = bundleDefaults();
  applyBundleRunKeys(json{{"rope", true}}, "b/bundle.json", plain);
  EXPECT_TRUE(plain.rope);
  EXPECT_FLOAT_EQ(plain.rope_base, 10000.0f);

  const std::pair<json, const char*> bad[] = {
      {{{"kv_heads", 0}}, "b/bundle.json: \"kv_heads\" must be an integer in 1.."},
      {{{"rope", "yes"}}, "b/bundle.json: \"rope\" must be true, false or a base > 1"},
      {{{"softcap", 0}}, "b/bundle.json: \"softcap\" must be a number > 0"},
      {{{"sinks", -1}}, "b/bundle.json: \"sinks\" must be an integer >= 0"},
      {{{"sinks", 2}}, "b/bundle.json: \"sinks\" is invalid: sinks:2 needs a window term"},
      {{{"rope_style", "x"}}, "b/bundle.json: \"rope_style\" is invalid"},
      {{{"alibi", 1}}, "b/bundle.json: \"alibi\" must be true or false"},
  };
  for (const auto& [j, message] : bad) {
    Settings x = bundleDefaults();
    try {
      applyBundleRunKeys(j, "b/bundle.json", x);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(VariantSettings, SeededWeightsArePooledPerGroup) {
  Settings s;
  s.heads = 4;
  s.head_dim = 3;
  s.kv_heads = 2;
  const AttentionInputs pooled = buildInputs(s);
  s.kv_heads = 0;
  const AttentionInputs full = buildInputs(s);
  ASSERT_EQ(pooled.w_k.shape, (Shape{6, 12}));
  ASSERT_EQ(pooled.w_v.shape, (Shape{6, 12}));
  ASSERT_EQ(pooled.b_k.shape, (Shape{6}));
  EXPECT_EQ(pooled.w_q.data, full.w_q.data);
  // K/V head g = mean of heads 2g and 2g + 1 (rows of d = 3).
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t x = 0; x < 12; ++x) {
        const double mean = 0.5 * (double(full.w_k.data[((2 * g) * 3 + c) * 12 + x]) +
                                   full.w_k.data[((2 * g + 1) * 3 + c) * 12 + x]);
        EXPECT_NEAR(pooled.w_k.data[(g * 3 + c) * 12 + x], mean, 1e-7);
      }
  const AttentionTrace t = runAttention(pooled, attentionOptions(s));
  EXPECT_EQ(t.G, 2);
  s.kv_heads = 3;
  EXPECT_THROW(buildInputs(s), InputError);
}

}  // namespace
}  // namespace attnscope
