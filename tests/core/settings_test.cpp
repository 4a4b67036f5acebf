// Settings JSON round trip and errors; buildInputs for text, cross and synthetic sources.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "config/settings.h"
#include "attention/positional_encoding.h"
#include "config/text_input.h"

namespace attnscope {
namespace {

using nlohmann::json;

Settings unusualSettings() {
  Settings s;
  s.source = InputSource::Synthetic;
  s.text = "我爱猫\nI love cats";
  s.cross_attention = true;
  s.key_text = "a b c";
  s.synthetic_L = 31;
  s.synthetic_S = 17;
  s.batch = 3;
  s.valid_lens = {5, kFollowValidLen, 17};  // -1: follows its line
  s.bundle_path = "/tmp/some bundle";
  s.heads = 6;
  s.head_dim = 3;
  s.positional_encoding = false;
  s.bias = false;
  s.seed = 18446744073709551615ull;
  s.mask = MaskSpec::parse("causal-br+window:2+segments:3,4+padding");
  s.fill = MaskFill::NegBillion;
  s.scale = ScaleChoice::Temperature;
  s.temperature = 0.25f;
  s.dropout = 0.125f;
  s.train = true;
  s.prob_colormap = Colormap::Magma;
  s.log_scale = true;
  s.folded_layout = true;
  s.export_dir = "/tmp/exports";
  s.cell_px = 24;
  s.export_formats = {"svg", "png", "csv"};
  return s;
}

void expectSame(const Settings& a, const Settings& b) {
  EXPECT_EQ(settingsToJson(a), settingsToJson(b));
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.valid_lens, b.valid_lens);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.fill, b.fill);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.prob_colormap, b.prob_colormap);
  EXPECT_EQ(a.cell_px, b.cell_px);
  EXPECT_EQ(a.export_formats, b.export_formats);
}

TEST(SettingsJson, RoundTrip) {
  expectSame(settingsFromJson(settingsToJson(Settings())), Settings());
  const Settings s = unusualSettings();
  expectSame(settingsFromJson(settingsToJson(s)), s);
  EXPECT_EQ(settingsToJson(s)["mask"], "causal-br+window:2+segments:3,4+padding");
  EXPECT_EQ(settingsToJson(s)["fill"], "1e9");
  EXPECT_EQ(settingsToJson(s)["prob_colormap"], "magma");
}

// The focused map is not a setting but lives in the same JSON under the keys older
// files already have (batch_item, focused_head) plus focused_layer.
TEST(SettingsJson, ViewFocusRoundTripsBesideTheSettings) {
  const ViewFocus focus{2, 5, 3};
  const json j = settingsToJson(unusualSettings(), focus);
  EXPECT_EQ(j["focused_layer"], 2);
  EXPECT_EQ(j["focused_head"], 5);
  EXPECT_EQ(j["batch_item"], 3);
  EXPECT_EQ(viewFocusFromJson(j), focus);
  expectSame(settingsFromJson(j), unusualSettings());
  EXPECT_EQ(viewFocusFromJson(json{{"focused_head", 1}, {"batch_item", 2}}), (ViewFocus{0, 1, 2}));  // older file
  EXPECT_EQ(viewFocusFromJson(json::object()), ViewFocus{});
  EXPECT_THROW(viewFocusFromJson(json{{"focused_head", -1}}), InputError);
  EXPECT_THROW(viewFocusFromJson(json{{"focused_layer", "x"}}), InputError);
}

// A trained model: its name (or folder) and its own text, beside the sandbox's text.
TEST(SettingsJson, ModelSourceRoundTrips) {
  Settings s;
  s.source = InputSource::Model;
  s.model = "/models/mine";
  s.model_text = "x = (1,\n 2)";
  s.patch_corrupt = "y = (1,\n 2)";
  s.patch_answer = ")";
  s.patch_wrong = "\u00e9";
  const json j = settingsToJson(s);
  EXPECT_EQ(j["source"], "model");
  EXPECT_EQ(j["model"], "/models/mine");
  const Settings back = settingsFromJson(j);
  EXPECT_EQ(back.source, InputSource::Model);
  EXPECT_EQ(back.model, s.model);
  EXPECT_EQ(back.model_text, s.model_text);
  EXPECT_EQ(back.patch_corrupt, s.patch_corrupt);  // the patching view's inputs
  EXPECT_EQ(back.patch_answer, s.patch_answer);
  EXPECT_EQ(back.patch_wrong, s.patch_wrong);
  EXPECT_EQ(back.text, Settings().text);
  EXPECT_EQ(Settings().model, "python-code");
  EXPECT_EQ(Settings().model_text, kDefaultModelText);
}

TEST(SettingsJson, MissingAndUnknownKeys) {
  const Settings s = settingsFromJson(json{{"heads", 2}, {"unknown_key", "ignored"}});
  EXPECT_EQ(s.heads, 2);
  EXPECT_EQ(s.head_dim, Settings().head_dim);
  EXPECT_EQ(s.text, Settings().text);
}

struct BadSettings {
  json value;
  const char* message;
};

TEST(SettingsJson, WrongTypesAndValuesNameTheKey) {
  const BadSettings cases[] = {
      {json::array(), "settings: expected a JSON object"},
      {{{"heads", "four"}}, "settings: 'heads' must be an integer"},
      {{{"heads", 0}}, "settings: 'heads' must be in [1, 4096], got 0"},
      {{{"head_dim", 2.5}}, "settings: 'head_dim' must be an integer"},
      {{{"bias", 1}}, "settings: 'bias' must be true or false"},
      {{{"text", 5}}, "settings: 'text' must be a string"},
      {{{"source", "camera"}}, "settings: 'source' must be \"text\", \"synthetic\", \"bundle\" or \"model\""},
      {{{"model", ""}}, "settings: 'model' must name a shipped model or a model folder"},
      {{{"model_text", 3}}, "settings: 'model_text' must be a string"},
      {{{"mask", "casual"}}, "settings: 'mask' is invalid: mask: unknown term 'casual'"},
      {{{"mask", 3}}, "settings: 'mask' must be a mask string"},
      {{{"fill", "zero"}}, "settings: 'fill' must be \"inf\" or \"1e9\""},
      {{{"scale", "half"}}, "settings: 'scale' must be"},
      {{{"temperature", 0}}, "settings: 'temperature' must be > 0"},
      {{{"temperature", -1.5}}, "settings: 'temperature' must be > 0"},
      {{{"dropout", 1.0}}, "settings: 'dropout' must be in [0, 1)"},
      {{{"dropout", "0.1"}}, "settings: 'dropout' must be a number"},
      {{{"valid_lens", {3, -2}}}, "settings: 'valid_lens' must be a list of non-negative integers (or -1)"},
      {{{"valid_lens", 3}}, "settings: 'valid_lens' must be a list of integers"},
      {{{"seed", -4}}, "settings: 'seed' must be a non-negative integer"},
      {{{"prob_colormap", "rainbow"}}, "settings: 'prob_colormap' is invalid"},
      {{{"synthetic_L", 0}}, "settings: 'synthetic_L' must be in [1, "},
      {{{"cell_px", -2}}, "settings: 'cell_px' must be in [0, 4096], got -2"},
      {{{"export_formats", {"png", "gif"}}}, "settings: 'export_formats' must be a list of png, svg, pdf, npy, csv, html"},
      {{{"export_formats", "png"}}, "settings: 'export_formats' must be a list of png, svg, pdf, npy, csv, html"},
  };
  for (const BadSettings& c : cases) {
    try {
      settingsFromJson(c.value);
      ADD_FAILURE() << "accepted " << c.value.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.value.dump() << " -> " << e.what();
    }
  }
}

// With a problems list, every bad key keeps its default and every valid key is kept.
TEST(SettingsJson, BadKeysKeepDefaultsAndTheRestSurvives) {
  const json bad_values[] = {{{"dropout", 2.0}}, {{"temperature", 0}}, {{"heads", "four"}}, {{"mask", "casual"}},
                             {{"export_formats", {"gif"}}}, {{"seed", -1}}, {{"dropout", 1e300}}};
  for (const json& bad : bad_values) {
    json j = {{"text", "kept text"}, {"heads", 3}, {"mask", "causal"}, {"dropout", 0.25}};
    for (const auto& item : bad.items()) j[item.key()] = item.value();
    std::vector<std::string> problems;
    const Settings s = settingsFromJson(j, &problems);
    ASSERT_EQ(problems.size(), 1u) << j.dump();
    EXPECT_NE(problems[0].find("'" + bad.begin().key() + "'"), std::string::npos) << problems[0];
    EXPECT_EQ(s.text, "kept text");
    const Settings defaults;
    const std::string key = bad.begin().key();
    EXPECT_EQ(s.heads, key == "heads" ? defaults.heads : 3) << j.dump();
    EXPECT_EQ(s.mask.toString(), key == "mask" ? defaults.mask.toString() : "causal") << j.dump();
    EXPECT_EQ(s.dropout, key == "dropout" ? defaults.dropout : 0.25f) << j.dump();
    EXPECT_EQ(s.temperature, defaults.temperature);
    EXPECT_EQ(s.export_formats, defaults.export_formats);
  }
}

class SettingsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("attnscope_settings_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(SettingsFile, SaveLoadRoundTripLeavesNoTemporaryFile) {
  const std::string path = (dir_ / "settings.json").string();
  saveSettingsFile(unusualSettings(), path, ViewFocus{1, 4, 2});
  ViewFocus focus;
  expectSame(loadSettingsFile(path, &focus), unusualSettings());
  EXPECT_EQ(focus, (ViewFocus{1, 4, 2}));
  saveSettingsFile(Settings(), path);  // overwrite in place
  expectSame(loadSettingsFile(path), Settings());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(SettingsFile, BadFilesGiveOneLineErrors) {
  auto expectError = [](const std::string& path, const std::string& message) {
    try {
      loadSettingsFile(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(message), std::string::npos) << msg;
      EXPECT_NE(msg.find(path), std::string::npos) << "names the file: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos);
    }
  };
  expectError((dir_ / "missing.json").string(), "cannot open");
  expectError(write("truncated.json", "{\"heads\": 4, "), "invalid JSON at byte");
  expectError(write("garbage.json", "heads = 4"), "invalid JSON");
  expectError(write("type.json", "{\"heads\": true}"), "'heads' must be an integer");
  // Regression (issue 12): nlohmann's out_of_range escaped, even under an unknown key.
  expectError(write("overflow.json", "{\"heads\": 1e400}"), "number overflow");
  expectError(write("overflow_unknown.json", "{\"heads\": 2, \"zzz\": [-1e400]}"), "number overflow");
  expectError(dir_.string(), "cannot read");  // a folder, not a file
  expectError("/dev/zero", "larger than 16 MiB");  // endless: stops early
  EXPECT_THROW(saveSettingsFile(Settings(), (dir_ / "no_such_dir" / "s.json").string()), InputError);
}

// The app's own settings file (issue 12): a bad file is moved aside to PATH.bad-DATE, never
// overwritten, valid keys are kept, and the notice names both files.
TEST_F(SettingsFile, RecoverMovesABadFileAsideAndKeepsValidKeys) {
  struct Case {
    const char* text;
    const char* problem;   // in the notice
    bool keeps_heads;      // "heads": 3 survives
    bool keeps_text;       // "text": "mine" survives
  };
  const Case cases[] = {
      {R"({"heads": 3, "text": "mine", "dropout": 1.5})", "'dropout' must be in [0, 1)", true, true},
      {R"({"heads": 3, "text": "mine", "zzz": {"x": 1e400}})", "number 1e400 is too large", true, true},
      {R"({"heads": 1e400, "text": "mine"})", "number 1e400 is too large", false, true},
      {R"({"heads": 3, "text": "mine", )", "invalid JSON at byte", false, false},
      {"\x89PNG garbage", "invalid JSON", false, false},
  };
  for (const Case& c : cases) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string path = write("settings.json", c.text);
    const RecoveredSettings r = recoverSettingsFile(path);
    EXPECT_NE(r.notice.find(c.problem), std::string::npos) << c.text << " -> " << r.notice;
    EXPECT_NE(r.notice.find(path), std::string::npos) << r.notice;
    ASSERT_FALSE(r.moved_to.empty()) << c.text;
    EXPECT_NE(r.notice.find(r.moved_to), std::string::npos) << r.notice;
    EXPECT_EQ(r.moved_to.rfind(path + ".bad-", 0), 0u) << r.moved_to;
    EXPECT_FALSE(std::filesystem::exists(path));
    std::ifstream moved(r.moved_to, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(moved), {}), c.text) << "the bad file is kept byte for byte";
    EXPECT_EQ(r.settings.heads, c.keeps_heads ? 3 : Settings().heads) << c.text;
    EXPECT_EQ(r.settings.text, c.keeps_text ? "mine" : Settings().text) << c.text;
    EXPECT_EQ(r.settings.dropout, 0.0f);
  }
  // A second bad file in the same second gets its own name: the first is never overwritten.
  const std::string path = write("settings.json", "{");
  const RecoveredSettings first = recoverSettingsFile(path);
  write("settings.json", "[");
  const RecoveredSettings second = recoverSettingsFile(path);
  ASSERT_FALSE(first.moved_to.empty());
  ASSERT_FALSE(second.moved_to.empty());
  EXPECT_NE(first.moved_to, second.moved_to);
  std::ifstream kept(first.moved_to);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "{");
}

TEST_F(SettingsFile, RecoverLeavesGoodOrMissingFilesAlone) {
  const std::string path = (dir_ / "settings.json").string();
  RecoveredSettings r = recoverSettingsFile(path);
  EXPECT_EQ(r.notice, "");
  EXPECT_FALSE(std::filesystem::exists(path));
  saveSettingsFile(unusualSettings(), path);
  r = recoverSettingsFile(path);
  EXPECT_EQ(r.notice, "");
  EXPECT_EQ(r.moved_to, "");
  expectSame(r.settings, unusualSettings());
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(AttentionOptionsFromSettings, ScaleChoices) {
  Settings s;
  s.heads = 4;
  s.head_dim = 16;
  s.mask = MaskSpec::parse("causal");
  s.dropout = 0.2f;
  s.train = true;
  s.seed = 77;
  AttentionOptions o = attentionOptions(s);
  EXPECT_EQ(o.heads, 4);
  EXPECT_EQ(o.scale_mode, ScaleMode::InvSqrtD);
  EXPECT_EQ(o.mask, s.mask);
  EXPECT_EQ(o.dropout, 0.2f);
  EXPECT_TRUE(o.train);
  EXPECT_EQ(o.seed, 77u);
  s.scale = ScaleChoice::None;
  EXPECT_EQ(attentionOptions(s).scale_mode, ScaleMode::None);
  s.scale = ScaleChoice::Temperature;
  s.temperature = 2.0f;
  o = attentionOptions(s);
  EXPECT_EQ(o.scale_mode, ScaleMode::Custom);
  EXPECT_FLOAT_EQ(o.custom_scale, 1.0f / (2.0f * 4.0f));        // d = 16
  EXPECT_FLOAT_EQ(attentionOptions(s, 36).custom_scale, 1.0f / (2.0f * 3.0f));  // D=36, H=4: d = 9
  s.temperature = 0.0f;
  EXPECT_THROW(attentionOptions(s), InputError);
  s.temperature = -1.0f;
  EXPECT_THROW(attentionOptions(s), InputError);
}

TEST(BuildInputs, TextSingleLine) {
  Settings s;
  s.text = "I love 猫咪";
  s.heads = 2;
  s.head_dim = 3;
  const AttentionInputs in = buildInputs(s);
  EXPECT_EQ(in.query_tokens, (std::vector<std::string>{"I", "love", "猫", "咪"}));
  EXPECT_EQ(in.key_tokens, in.query_tokens);
  EXPECT_EQ(in.query.shape, (Shape{1, 4, 6}));
  EXPECT_EQ(in.key.data, in.query.data);  // self-attention
  EXPECT_EQ(in.value.data, in.query.data);
  EXPECT_TRUE(in.valid_lens.empty());
  EXPECT_TRUE(in.batch_query_tokens.empty());
  EXPECT_EQ(in.w_q.shape, (Shape{6, 6}));
  EXPECT_EQ(in.b_o.shape, (Shape{6}));
  // token embedding + positional encoding, row by row
  const Tensor pe = positionalEncoding(4, 6);
  for (int64_t t = 0; t < 4; ++t) {
    const std::vector<float> e = tokenEmbedding(in.query_tokens[t], 6, s.seed);
    for (int64_t c = 0; c < 6; ++c) EXPECT_FLOAT_EQ(in.query.data[t * 6 + c], e[c] + pe.data[t * 6 + c]);
  }
  s.positional_encoding = false;
  s.bias = false;
  const AttentionInputs plain = buildInputs(s);
  EXPECT_EQ(std::vector<float>(plain.query.data.begin(), plain.query.data.begin() + 6), tokenEmbedding("I", 6, 0));
  EXPECT_TRUE(plain.b_q.empty());
  EXPECT_NO_THROW(runAttention(in, attentionOptions(s)));
}

TEST(BuildInputs, TextLinesAreBatchItemsPaddedWithValidLens) {
  Settings s;
  s.text = "the cat sat on the mat\n\n我爱猫\n  \nhello";
  s.heads = 2;
  s.head_dim = 4;
  s.positional_encoding = false;
  AttentionInputs in = buildInputs(s);
  EXPECT_EQ(in.query.shape, (Shape{3, 6, 8}));
  EXPECT_EQ(in.valid_lens, (std::vector<int64_t>{6, 3, 1}));
  ASSERT_EQ(in.batch_query_tokens.size(), 3u);
  EXPECT_EQ(in.batch_query_tokens[1], (std::vector<std::string>{"我", "爱", "猫", "<pad>", "<pad>", "<pad>"}));
  EXPECT_EQ(in.query_tokens, in.batch_query_tokens[0]);
  // the same token has the same embedding in every line ("<pad>" included)
  const std::vector<float> pad = tokenEmbedding("<pad>", 8, 0);
  EXPECT_EQ(std::vector<float>(in.query.data.begin() + (1 * 6 + 4) * 8, in.query.data.begin() + (1 * 6 + 5) * 8), pad);
  // padding in the mask uses these lengths
  s.mask = MaskSpec::parse("padding");
  const AttentionTrace t = runAttention(in, attentionOptions(s));
  EXPECT_EQ(t.probs.data[((1 * 2 + 0) * 6 + 0) * 6 + 3], 0.0f);  // batch 1 key 3 is <pad>
  EXPECT_GT(t.probs.data[((1 * 2 + 0) * 6 + 0) * 6 + 2], 0.0f);
  EXPECT_EQ(t.batch_query_tokens, in.batch_query_tokens);

  // explicit valid_lens win, clamped to [0, S]; missing entries keep the line lengths
  s.valid_lens = {2, 99};
  in = buildInputs(s);
  EXPECT_EQ(in.valid_lens, (std::vector<int64_t>{2, 6, 1}));

  // kFollowValidLen (-1) follows its line's token count (issue 22 item 2)
  s.valid_lens = {kFollowValidLen, 2};
  EXPECT_EQ(buildInputs(s).valid_lens, (std::vector<int64_t>{6, 2, 1}));
  EXPECT_EQ(textKeyLengths(s), (std::vector<int64_t>{6, 3, 1}));

  // equal lengths: no valid_lens needed, unless padding asks for them (the lines' lengths)
  s.valid_lens.clear();
  s.text = "a b\nc d";
  EXPECT_EQ(buildInputs(s).valid_lens, (std::vector<int64_t>{2, 2}));
  EXPECT_NO_THROW(runAttention(buildInputs(s), attentionOptions(s)));
  s.mask = MaskSpec::parse("causal");
  EXPECT_TRUE(buildInputs(s).valid_lens.empty());
}

TEST(BuildInputs, CrossAttentionTakesKeysFromKeyText) {
  Settings s;
  s.text = "the cat sat";
  s.key_text = "le chat est assis sur le tapis";
  s.cross_attention = true;
  s.heads = 3;
  s.head_dim = 2;
  const AttentionInputs in = buildInputs(s);
  EXPECT_EQ(in.query.shape, (Shape{1, 3, 6}));
  EXPECT_EQ(in.key.shape, (Shape{1, 7, 6}));
  EXPECT_EQ(in.value.data, in.key.data);
  EXPECT_EQ(in.key_tokens.size(), 7u);
  EXPECT_EQ(in.key_tokens[0], "le");
  const AttentionTrace t = runAttention(in, attentionOptions(s));
  EXPECT_EQ(t.probs.shape, (Shape{1, 3, 3, 7}));
  // "le" appears twice: both key rows get the same embedding apart from position
  s.positional_encoding = false;
  const AttentionInputs flat = buildInputs(s);
  EXPECT_TRUE(std::equal(flat.key.data.begin(), flat.key.data.begin() + 6, flat.key.data.begin() + 5 * 6));

  // two query lines, one key line: the key line serves both
  s.text = "the cat\nsat";
  const AttentionInputs two = buildInputs(s);
  EXPECT_EQ(two.key.shape, (Shape{2, 7, 6}));
  EXPECT_EQ(two.valid_lens, std::vector<int64_t>{});  // keys are all full length
  s.key_text = "a b\nc\nd";
  EXPECT_THROW(buildInputs(s), InputError);
}

TEST(BuildInputs, Synthetic) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.batch = 2;
  s.synthetic_L = 5;
  s.synthetic_S = 9;
  s.heads = 2;
  s.head_dim = 4;
  s.seed = 3;
  AttentionInputs in = buildInputs(s);
  EXPECT_EQ(in.query.shape, (Shape{2, 5, 8}));
  EXPECT_EQ(in.key.shape, (Shape{2, 9, 8}));
  EXPECT_EQ(in.value.data, in.key.data);
  EXPECT_EQ(in.query_tokens, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(in.key_tokens.back(), "8");
  EXPECT_EQ(buildInputs(s).query.data, in.query.data);  // seeded
  s.seed = 4;
  EXPECT_NE(buildInputs(s).query.data, in.query.data);
  double mean = 0;
  for (float x : in.query.data) mean += x;
  EXPECT_LT(std::fabs(mean / in.query.data.size()), 0.5);

  s.valid_lens = {20, 4};
  EXPECT_EQ(buildInputs(s).valid_lens, (std::vector<int64_t>{9, 4}));  // clamped to S
  s.synthetic_S = 5;  // L == S, not cross: self-attention
  in = buildInputs(s);
  EXPECT_EQ(in.key.data, in.query.data);
  EXPECT_NO_THROW(runAttention(in, attentionOptions(s)));
}

TEST(BuildInputs, Errors) {
  auto expectError = [](const Settings& s, const std::string& message) {
    try {
      buildInputs(s);
      ADD_FAILURE() << "accepted, expected " << message;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  Settings s;
  s.text = " \n \t ";
  expectError(s, "text: no tokens");
  s = Settings();
  s.cross_attention = true;
  s.key_text = "";
  expectError(s, "key text: no tokens");
  s = Settings();
  s.heads = 0;
  expectError(s, "heads must be >= 1");
  s = Settings();
  s.source = InputSource::Synthetic;
  s.synthetic_L = 1 << 20;
  s.synthetic_S = 1 << 20;
  s.batch = 1 << 12;  // inputs alone are petabytes: refused even in tiles (a full trace is larger still)
  expectError(s, " GiB but only ");
  s = Settings();
  s.source = InputSource::Bundle;
  expectError(s, "bundle: no bundle directory chosen");
}

}  // namespace
}  // namespace attnscope
