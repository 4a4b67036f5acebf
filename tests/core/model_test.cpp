// The model runtime's own contracts (the numbers against PyTorch are in tests/cli/test_model.py):
// one runner reused across texts of changing length gives what a fresh runner gives,
// tokenization (UTF-8 characters, unknown ids, bytes), and next-token predictions.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "model/transformer.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// A small random model folder: D = 8, H = 2, N = 2, T = 12, vocab "<unk>" + "abcé\n".
class ModelFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnscope-model-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& tokenizer = "chars") {
    const int64_t V = tokenizer == "chars" ? 6 : 256, D = 8, M = 16, T = 12;
    nlohmann::json cfg = {{"format", "attnscope-model/1"}, {"name", "tiny"}, {"description", "test"},
                          {"n_layers", 2}, {"n_heads", 2}, {"d_model", D}, {"d_mlp", M}, {"max_len", T},
                          {"vocab_size", V}, {"tokenizer", tokenizer}, {"unk_id", 0},
                          {"positional", "sinusoidal"}, {"activation", "gelu_tanh"}, {"ln_eps", 1e-5},
                          {"tied_embeddings", true}, {"mlp", true}};
    std::ofstream(dir_ / "config.json") << cfg.dump();
    if (tokenizer == "chars") std::ofstream(dir_ / "vocab.json") << R"(["<unk>", "a", "b", "c", "é", "\n"])";
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    auto save = [&](const std::string& name, Shape shape, float offset = 0.0f) {
      Tensor t(shape);
      for (float& v : t.data) v = normal(rng) + offset;
      writeNpy((dir_ / (name + ".npy")).string(), t);
    };
    save("tok_emb", {V, D});
    for (int i = 0; i < 2; ++i) {
      const std::string p = "blocks." + std::to_string(i) + ".";
      save(p + "ln1.weight", {D}, 1.0f);
      save(p + "ln1.bias", {D});
      for (const char* w : {"w_q", "w_k", "w_v", "w_o"}) save(p + "attn." + w, {D, D});
      save(p + "attn.b_q", {D});
      save(p + "ln2.weight", {D}, 1.0f);
      save(p + "ln2.bias", {D});
      save(p + "mlp.w_in", {M, D});
      save(p + "mlp.b_in", {M});
      save(p + "mlp.w_out", {D, M});
      save(p + "mlp.b_out", {D});
    }
    save("ln_f.weight", {D}, 1.0f);
    save("ln_f.bias", {D});
    return dir_.string();
  }

  fs::path dir_;
};

TEST_F(ModelFolder, ReusedRunnerMatchesFreshRunners) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner reused(model);
  for (const std::string text : {"abcab", "a", "cabbacabbaca", "ba\nc", "é"}) {
    const ModelRun& again = reused.run(text);
    ModelRunner fresh(model);
    const ModelRun& once = fresh.run(text);
    EXPECT_EQ(again.logits.shape, once.logits.shape) << text;
    EXPECT_EQ(again.logits.data, once.logits.data) << text;
    ASSERT_EQ(again.layers.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(again.layers[i].probs.data, once.layers[i].probs.data) << text;
    const int64_t L = static_cast<int64_t>(once.tokens.ids.size());
    EXPECT_EQ(once.layers[0].probs.shape, (Shape{1, 2, L, L}));
  }
}

TEST_F(ModelFolder, TokenizesCharactersAndFlagsUnknownOnes) {
  const Model model = loadModel(write());
  const ModelTokens t = tokenizeForModel(model, "aé\nxc\t");
  EXPECT_EQ(t.ids, (std::vector<int64_t>{1, 4, 5, 0, 3, 0}));
  EXPECT_EQ(t.unknown, (std::vector<uint8_t>{0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(t.label, (std::vector<std::string>{"a", "é", "\\n", "x", "c", "\\t"}));
  EXPECT_EQ(t.unknownCount(), 2);
}

TEST_F(ModelFolder, BytesTokenizerOneIdPerByte) {
  const Model model = loadModel(write("bytes"));
  const ModelTokens t = tokenizeForModel(model, "aé");
  EXPECT_EQ(t.ids, (std::vector<int64_t>{'a', 0xc3, 0xa9}));
  EXPECT_EQ(t.label, (std::vector<std::string>{"a", "\\xc3", "\\xa9"}));
  EXPECT_EQ(tokenLabel(model, '\n'), "\\n");
}

TEST_F(ModelFolder, TopPredictionsAreTheSoftmaxOrder) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  const ModelRun& run = runner.run("abca");
  const std::vector<Prediction> top = topPredictions(*model, run.logits, 3, 5);
  ASSERT_EQ(top.size(), 5u);
  double sum = 0.0, max_logit = -1e30;
  for (int64_t v = 0; v < 6; ++v) max_logit = std::max<double>(max_logit, run.logits.data[3 * 6 + v]);
  for (int64_t v = 0; v < 6; ++v) sum += std::exp(run.logits.data[3 * 6 + v] - max_logit);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_NEAR(top[i].prob, std::exp(run.logits.data[3 * 6 + top[i].id] - max_logit) / sum, 1e-12);
    if (i > 0) {
      EXPECT_GE(top[i - 1].prob, top[i].prob);
    }
  }
}

TEST_F(ModelFolder, TooLongAndEmptyTextsAreInputErrors) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  EXPECT_THROW(runner.run(std::string(13, 'a')), InputError);
  EXPECT_THROW(runner.run(""), InputError);
  EXPECT_NO_THROW(runner.run(std::string(12, 'a')));
}

}  // namespace
}  // namespace attnscope
