// Configure once: bundle.json's run keys through settingsForBundle, configureRun's options,
// how a folder is recognised (tensor vs attention bundle), and attention bundles read into
// imported maps, and the settings JSON an export writes. Hand-made folders in a temporary directory.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "config/attention_bundle.h"
#include "config/run.h"
#include "config/settings.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

class BundleFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnscope-run-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "") const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
  // query.npy [1, 4, 8] with every value 0.25 * index (finite, distinct).
  void writeQuery() const {
    Tensor query({1, 4, 8});
    for (size_t i = 0; i < query.data.size(); ++i) query.data[i] = 0.25f * static_cast<float>(i % 7);
    writeNpy(path("query.npy"), query);
  }

  fs::path dir_;
};

TEST_F(BundleFolder, BundleJsonRunKeysBecomeSettings) {
  writeQuery();
  write("bundle.json", R"({"heads": 2, "mask": "causal+window:1", "scale": 0.5, "fill": "-1e9",
                           "dropout": 0.25, "seed": 7, "notes": "hello"})");
  const Settings s = settingsForBundle(bundleDefaults(), path());
  EXPECT_EQ(s.source, InputSource::Bundle);
  EXPECT_EQ(s.bundle_path, path());
  EXPECT_EQ(s.heads, 2);
  EXPECT_EQ(s.mask.toString(), "causal+window:1");
  EXPECT_EQ(s.scale, ScaleChoice::Factor);
  EXPECT_EQ(s.scale_factor, 0.5f);
  EXPECT_EQ(s.fill, MaskFill::NegBillion);
  EXPECT_EQ(s.dropout, 0.25f);
  EXPECT_TRUE(s.train);
  EXPECT_EQ(s.seed, 7u);

  const attnscope::Run run = configureRun(s);
  EXPECT_EQ(run.options.heads, 2);
  EXPECT_EQ(run.options.scale_mode, ScaleMode::Custom);
  EXPECT_EQ(run.options.custom_scale, 0.5f);
  EXPECT_EQ(run.options.fill, MaskFill::NegBillion);
  EXPECT_TRUE(run.options.mask.causal);
  EXPECT_EQ(run.options.mask.window, 1);
  EXPECT_TRUE(run.options.train);
  EXPECT_EQ(run.options.seed, 7u);
  EXPECT_EQ(run.inputs.query.shape, (Shape{1, 4, 8}));
  ASSERT_EQ(run.notes.size(), 2u);  // seeded weights, then bundle.json's notes
  EXPECT_NE(run.notes[0].find("seeded default weights (seed 7, D=32)"), std::string::npos) << run.notes[0];
  EXPECT_EQ(run.notes[1], "hello");

  // Without bundle.json keys the base settings stand; the CLI base has H = 1.
  fs::remove(path("bundle.json"));
  Settings base;
  base.heads = 4;
  EXPECT_EQ(settingsForBundle(base, path()).heads, 4);
  EXPECT_EQ(settingsForBundle(bundleDefaults(), path()).heads, 1);
}

TEST_F(BundleFolder, BadRunKeysNameBundleJsonAndTheKey) {
  writeQuery();
  const struct {
    const char* json;
    const char* needle;
  } cases[] = {
      {R"({"heads": 0})", "\"heads\" must be an integer"},
      {R"({"mask": "casual"})", "\"mask\" is invalid"},
      {R"({"scale": -2})", "\"scale\""},
      {R"({"scale": "huge"})", "\"scale\""},
      {R"({"fill": "zero"})", "\"fill\""},
      {R"({"dropout": 1})", "\"dropout\""},
      {R"({"seed": -1})", "\"seed\""},
  };
  for (const auto& c : cases) {
    write("bundle.json", c.json);
    try {
      settingsForBundle(bundleDefaults(), path());
      ADD_FAILURE() << c.json << " accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bundle.json"), std::string::npos) << what;
      EXPECT_NE(what.find(c.needle), std::string::npos) << what;
    }
  }
}

TEST_F(BundleFolder, FolderKindsAreRecognised) {
  EXPECT_EQ(bundleKind(path()), BundleKind::Tensors);  // loadBundle then names query.npy
  writeQuery();
  EXPECT_EQ(bundleKind(path()), BundleKind::Tensors);
  writeNpy(path("attentions.npy"), Tensor({1, 1, 4, 4}, 0.25f));
  EXPECT_THROW(bundleKind(path()), InputError);  // both kinds
  fs::remove(path("query.npy"));
  EXPECT_EQ(bundleKind(path()), BundleKind::Attentions);
  EXPECT_THROW(configureRun(settingsForBundle(bundleDefaults(), path())), InputError);
  EXPECT_THROW(bundleKind(path("missing")), InputError);
}

// tokens.txt as `model run` / `model generate` (and the app's Ctrl+S on a generation) write
// it: the third column is the label; the first `generated` line is where the generation
// starts. Lines that are not all of that form are labels as they are (table-driven).
TEST_F(BundleFolder, ModelRunTokensTxtGivesLabelsAndTheGeneratedColumn) {
  writeNpy(path("attentions.npy"), Tensor({1, 1, 1, 3, 3}, 0.25f));
  struct Row {
    const char* text;
    std::vector<std::string> labels;
    int64_t first_generated;
  };
  const Row rows[] = {
      {"0\t5\td\n1\t6\te\n2\t7\tf\n", {"d", "e", "f"}, -1},
      {"0\t5\td\n1\t0\t\\n\tunknown\n2\t7\t\xE2\x90\xA3\n", {"d", "\\n", "\xE2\x90\xA3"}, -1},
      {"0\t5\td\n1\t6\te\t\tgenerated\n2\t7\tf\t\tgenerated\n", {"d", "e", "f"}, 1},
      {"0\t5\td\n1\t0\tx\tunknown\tgenerated\n2\t7\tf\t\tgenerated\n", {"d", "x", "f"}, 1},
      // byte pieces' sixth column (the raw piece), before and among the generated lines
      {"0\t5\t\xE4\xB8\x96\t\t\t<0xE4>\n1\t6\t\xC2\xB7\t\tgenerated\t<0xB8>\n2\t7\tf\t\tgenerated\n",
       {"\xE4\xB8\x96", "\xC2\xB7", "f"}, 1},
      {"0\t5\td\n1\t6\te\t\t\t<0xE4>\n2\t7\tf\n", {"d", "e", "f"}, -1},
      {"0\t5\ta b\n2\t6\te\n1\t7\tf\n", {"0\t5\ta b", "2\t6\te", "1\t7\tf"}, -1},  // positions out of order
      {"0\tx\td\n1\t6\te\n2\t7\tf\n", {"0\tx\td", "1\t6\te", "2\t7\tf"}, -1},      // an id that is no number
      {"a\tb\nc\nd\n", {"a\tb", "c", "d"}, -1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    write("tokens.txt", row.text);
    const ImportedMaps imported = loadAttentionBundle(path());
    EXPECT_EQ(imported.query_tokens, (std::vector<std::vector<std::string>>{row.labels}));
    EXPECT_EQ(imported.first_generated, row.first_generated);
    EXPECT_EQ(viewFromImported(imported).first_generated, row.first_generated);
  }
}

TEST_F(BundleFolder, AttentionBundleReadsMapsTokensAndNames) {
  Tensor maps({2, 1, 3, 2, 4}, 0.25f);  // [layers, B, H, L, S]
  maps.data[5] = 0.5f;
  writeNpy(path("attentions.npy"), maps);
  write("tokens.txt", "a\nb\n");
  write("key_tokens.txt", "w\nx\ny\nz\n");
  write("bundle.json", R"({"model": "toy", "layer_names": ["one", "two"], "notes": "n", "heads": 99})");
  const ImportedMaps imported = loadAttentionBundle(path());
  EXPECT_EQ(imported.maps.shape, maps.shape);
  EXPECT_EQ(imported.maps.data, maps.data);
  EXPECT_EQ(imported.query_tokens, (std::vector<std::vector<std::string>>{{"a", "b"}}));
  EXPECT_EQ(imported.key_tokens, (std::vector<std::vector<std::string>>{{"w", "x", "y", "z"}}));
  EXPECT_EQ(imported.layer_names, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ((std::pair<std::string, std::string>{imported.model, imported.notes}),
            (std::pair<std::string, std::string>{"toy", "n"}));
  // An attention bundle's run keys ("heads") have nothing to run: ignored.
  EXPECT_EQ(settingsForBundle(bundleDefaults(), path()).heads, 1);

  // One layer [B, H, L, S] gets a leading layer axis; a bad layer_names count is refused.
  writeNpy(path("attentions.npy"), Tensor({1, 3, 2, 4}, 0.25f));
  write("bundle.json", R"({"layer_names": ["one", "two"]})");
  EXPECT_THROW(loadAttentionBundle(path()), InputError);
  write("bundle.json", "{}");
  EXPECT_EQ(loadAttentionBundle(path()).maps.shape, (Shape{1, 1, 3, 2, 4}));
  write("tokens.txt", "a\nb\nc\n");
  try {
    loadAttentionBundle(path());
    FAIL() << "3 tokens for L = 2 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokens.txt: 3 labels but attentions.npy has L = 2"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attnscope

namespace attnscope {
namespace {

// An export's settings JSON (exportSettingsJson): a trained model's run keeps the keys that
// describe it and adds "run" from its view; every other key of the settings is a sandbox
// key it drops (a new setting shows up here and must be classified). Other sources write
// settingsToJson unchanged.
TEST(ExportSettingsJson, AModelRunKeepsOnlyWhatDescribesIt) {
  ViewModel view;
  view.layers = 2, view.H = 4, view.B = 1, view.L = view.S = 21;
  view.model = "python-code";
  view.maps.resize(2);
  view.maps[0].mask_name = "causal";
  view.maps[1].mask_name = "causal+causal-window:8";
  Settings s;
  s.source = InputSource::Model;
  s.model = "python-code";
  s.model_text = "def f(x): return f(x)";
  s.heads = 3, s.seed = 5, s.text = "sandbox";
  const nlohmann::json j = exportSettingsJson(s, ViewFocus{1, 2, 0}, view);
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  const std::set<std::string> want = {"source", "model", "model_text", "model_truncate", "model_ablate", "model_knockout",
                                      "focused_layer", "focused_head", "batch_item",
                                      "prob_colormap", "log_scale", "folded_layout", "export_dir", "cell_px",
                                      "export_formats", "run"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["run"], (nlohmann::json{{"model", "python-code"}, {"layers", 2}, {"heads", 4}, {"tokens", 21},
                                      {"mask", "causal+causal-window:8"}}));
  EXPECT_EQ(j["model_text"], s.model_text);
  EXPECT_EQ(j["focused_layer"], 1);
  EXPECT_EQ(j["focused_head"], 2);
  s.source = InputSource::Text;
  EXPECT_EQ(exportSettingsJson(s, ViewFocus{1, 2, 0}, view), settingsToJson(s, ViewFocus{1, 2, 0}));
}

}  // namespace
}  // namespace attnscope
