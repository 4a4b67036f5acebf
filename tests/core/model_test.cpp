// The model runtime's own contracts (the numbers against PyTorch are in tests/cli/test_model.py):
// one runner reused across texts of changing length gives what a fresh runner gives,
// tokenization (UTF-8 characters, unknown ids, bytes), and next-token predictions.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <tuple>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "analysis/cache_footprint.h"
#include "config/model_source.h"
#include "attention/kv_cache.h"
#include "config/run.h"
#include "heap_bytes.h"
#include "model/folder_runner.h"
#include "model/local_models.h"
#include "model/logit_lens.h"
#include "model/model.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// A layer's attention weights as the sandbox's inputs (float32 nn.Linear layout, not panels).
AttentionInputs inputsOf(const LayerWeights& w) {
  auto tensor = [](const Weights& m) {
    Tensor t(m.shape);
    std::copy(m.f32.begin(), m.f32.end(), t.data.begin());
    return t;
  };
  AttentionInputs in;
  in.w_q = tensor(w.q.weight), in.w_k = tensor(w.k.weight), in.w_v = tensor(w.v.weight), in.w_o = tensor(w.o.weight);
  in.b_q = w.q.bias, in.b_k = w.k.bias, in.b_v = w.v.bias, in.b_o = w.o.bias;
  return in;
}

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

  std::string write(const std::string& tokenizer = "chars", int64_t T = 12) {
    const int64_t V = tokenizer == "chars" ? 6 : 256, D = 8, M = 16;
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
    EXPECT_EQ(again.logits.dense().shape, once.logits.dense().shape) << text;
    EXPECT_EQ(again.logits.dense().data, once.logits.dense().data) << text;
    ASSERT_EQ(again.layers.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(again.layers[i].probs.data, once.layers[i].probs.data) << text;
    const int64_t L = static_cast<int64_t>(once.tokens.ids.size());
    EXPECT_EQ(once.layers[0].probs.shape, (Shape{1, 2, L, L}));
  }
}

// Generation's steps compute one row each (their probs within 1e-5 of a fresh run's rows);
// the next ordinary run recomputes the stepped positions' blocks and equals a fresh run bit
// for bit again.
TEST_F(ModelFolder, StepsComputeOneRowAndRunsReturnToTheGrid) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  ModelTokens tokens = tokenizeForModel(*model, "abcab");
  runner.run(tokens);
  const int64_t H = model->config.heads, N = model->config.n_layers;
  for (int64_t id : {1, 2, 0}) {
    tokens.ids.push_back(id);
    tokens.text.push_back(model->chars->entry(id));
    tokens.label.push_back(model->chars->entry(id));
    tokens.unknown.push_back(0);
    const ModelRun& stepped = runner.step(tokens);
    const int64_t L = static_cast<int64_t>(tokens.ids.size());
    EXPECT_EQ(stepped.rowsComputed(), 1);
    EXPECT_EQ(stepped.decoded_from, 5);
    ASSERT_EQ(stepped.step_probs.shape, (Shape{N, H, L}));
    ModelRunner fresh(model);
    const ModelRun& once = fresh.run(tokens);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < L; ++j)
          ASSERT_NEAR(stepped.step_probs.data[(i * H + h) * L + j], once.layers[i].probs.data[((h * L) + L - 1) * L + j], 1e-5);
    for (int64_t v = 0; v < once.logits.vocab(); ++v)
      ASSERT_NEAR(stepped.logits.row(L - 1)[v], once.logits.row(L - 1)[v], 1e-4);
  }
  // A step that keeps the maps cannot append to traces the RowsOnly steps left behind: it
  // runs on the grid instead, and every trace holds every position again.
  tokens.ids.push_back(1);
  tokens.text.push_back(model->chars->entry(1));
  tokens.label.push_back(model->chars->entry(1));
  tokens.unknown.push_back(0);
  const ModelRun& kept = runner.step(tokens, StepMaps::Keep);
  EXPECT_EQ(kept.decoded_from, -1);
  EXPECT_EQ(kept.layers.front().L, static_cast<int64_t>(tokens.ids.size()));
  const ModelRun& synced = runner.run(tokens);
  EXPECT_EQ(synced.decoded_from, -1);
  EXPECT_EQ(synced.rowsComputed(), 0);  // the grid run above left nothing to redo
  ModelRunner fresh(model);
  const ModelRun& once = fresh.run(tokens);
  EXPECT_EQ(synced.logits.dense().data, once.logits.dense().data);
  for (int64_t i = 0; i < N; ++i) EXPECT_EQ(synced.layers[i].probs.data, once.layers[i].probs.data);
}

// Steps that keep the maps leave every layer's trace as a fresh run's (within rounding):
// the same shapes, mask, labels and rows, maps grown by one row per step.
TEST_F(ModelFolder, StepsThatKeepTheMapsCompleteTheTraces) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  ModelTokens tokens = tokenizeForModel(*model, "cab");
  runner.run(tokens);
  for (int64_t id : {0, 2, 1, 1}) {
    tokens.ids.push_back(id);
    tokens.text.push_back(model->chars->entry(id));
    tokens.label.push_back(model->chars->entry(id));
    tokens.unknown.push_back(0);
    const ModelRun& stepped = runner.step(tokens, StepMaps::Keep);
    EXPECT_EQ(stepped.rowsComputed(), 1);
    ModelRunner fresh(model);
    const ModelRun& once = fresh.run(tokens);
    for (size_t i = 0; i < once.layers.size(); ++i) {
      const AttentionTrace &a = stepped.layers[i], &b = once.layers[i];
      ASSERT_EQ(a.L, b.L);
      EXPECT_EQ(a.mask.allowed.data, b.mask.allowed.data);
      EXPECT_EQ(a.query_tokens, b.query_tokens);
      for (auto [x, y, tol] : {std::tuple{&a.probs, &b.probs, 1e-5}, {&a.scores, &b.scores, 1e-4}, {&a.output, &b.output, 1e-4},
                               {&a.q, &b.q, 1e-5}, {&a.k, &b.k, 1e-5}, {&a.v, &b.v, 1e-5}, {&a.context, &b.context, 1e-5},
                               {&a.context_heads, &b.context_heads, 1e-5}, {&a.q_proj, &b.q_proj, 1e-5}}) {
        ASSERT_EQ(x->shape, y->shape);
        for (size_t n = 0; n < y->data.size(); ++n)
          if (std::isfinite(y->data[n])) ASSERT_NEAR(x->data[n], y->data[n], tol) << "layer " << i << " cell " << n;
          else ASSERT_EQ(x->data[n], y->data[n]);
      }
    }
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

// python-code's unknown entry is the character U+FFFD, which is also what the app's text box
// (16-bit ImWchar) makes of a typed emoji: it matches, yet it is unknown and counted.
TEST_F(ModelFolder, UnknownEntryThatIsACharacterIsFlagged) {
  write();
  std::ofstream(dir_ / "vocab.json") << R"(["\ufffd", "a", "b", "c", "é", "\n"])";
  const Model model = loadModel(dir_.string());
  const ModelTokens t = tokenizeForModel(model, "a\xef\xbf\xbd\xf0\x9f\x98\x80" "c");  // a, U+FFFD, U+1F600, c
  EXPECT_EQ(t.ids, (std::vector<int64_t>{1, 0, 0, 3}));
  EXPECT_EQ(t.unknown, (std::vector<uint8_t>{0, 1, 1, 0}));
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
  const float* row = run.logits.row(3);
  const std::vector<Prediction> top = topPredictions(*model, row, run.logits.vocab(), 5);
  ASSERT_EQ(top.size(), 5u);
  double sum = 0.0, max_logit = -1e30;
  for (int64_t v = 0; v < 6; ++v) max_logit = std::max<double>(max_logit, row[v]);
  for (int64_t v = 0; v < 6; ++v) sum += std::exp(row[v] - max_logit);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_NEAR(top[i].prob, std::exp(row[top[i].id] - max_logit) / sum, 1e-12);
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

// The app's and export's view of a model run: every layer, labels with unknown characters
// marked, and the top-5 guess after every position with the actual next character's
// probability, all against a float64 softmax of the logits computed here.
TEST_F(ModelFolder, ViewOfAModelRunHasPredictionsForEveryPosition) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  const std::string text = "ab?ca";
  const ModelRun& run = runner.run(text);
  const ViewModel view = viewFromModelRun(*model, run);
  EXPECT_EQ(view.source, ViewSource::ModelRun);
  EXPECT_EQ(view.layers, 2);
  EXPECT_EQ(view.H, 2);
  EXPECT_EQ(view.L, 5);
  EXPECT_EQ(view.model, "tiny");
  EXPECT_EQ(view.notes, "test");  // no training.json: the config's description
  EXPECT_EQ(view.unknown_tokens, 1);
  EXPECT_EQ(view.query_tokens[0], (std::vector<std::string>{"a", "b", "? (unk)", "c", "a"}));
  ASSERT_EQ(view.predictions.size(), 5u);
  const int64_t V = 6;
  const std::vector<std::string> vocab = {"<unk>", "a", "b", "c", "é", "\\n"};
  for (int64_t t = 0; t < 5; ++t) {
    const float* row = run.logits.row(t);
    double max_logit = -1e30, sum = 0.0;
    for (int64_t v = 0; v < V; ++v) max_logit = std::max<double>(max_logit, row[v]);
    std::vector<double> p(V);
    for (int64_t v = 0; v < V; ++v) sum += p[v] = std::exp(double(row[v]) - max_logit);
    for (double& x : p) x /= sum;
    const NextTokenPredictions& got = view.predictions[t];
    ASSERT_EQ(got.top.size(), 5u);
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (p[v] > p[best]) best = v;
    EXPECT_EQ(got.top[0].label, vocab[best]) << t;
    for (size_t i = 0; i < got.top.size(); ++i) {
      const auto id = std::find(vocab.begin(), vocab.end(), got.top[i].label) - vocab.begin();
      EXPECT_NEAR(got.top[i].prob, p[id], 1e-9) << t;
      if (i > 0) {
        EXPECT_GE(got.top[i - 1].prob, got.top[i].prob);
      }
    }
    if (t == 4) {
      EXPECT_EQ(got.actual, "");
      EXPECT_FALSE(got.actual_is_top);
      continue;
    }
    const int64_t next = run.tokens.ids[t + 1];
    EXPECT_EQ(got.actual, std::string(1, text[t + 1]));
    EXPECT_NEAR(got.actual_prob, p[next], 1e-9);
    EXPECT_EQ(got.actual_is_top, t + 1 != 2 && next == best) << t;  // an unknown character is never "right"
  }
}

// The logit lens (numbers against PyTorch: tests/cli/test_logit_lens.py): residuals only when
// asked for, [N + 1, L, 5] ids and probabilities, the last layer the model's own softmax, a
// runner reused without residuals drops them, and the app's view carries the labelled lens.
TEST_F(ModelFolder, LogitLensLastLayerIsTheModelsOutput) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner runner(model);
  EXPECT_TRUE(runner.run("abca").residuals.empty());
  const LogitLens lens = lensOfTokens(runner, tokenizeForModel(*model, "cab\na"));
  const ModelRun& run = runner.last();
  const int64_t L = 5, D = 8, V = 6;
  EXPECT_EQ(run.residuals.shape, (Shape{3, L, D}));
  ASSERT_EQ((std::vector<int64_t>{lens.layers, lens.positions, lens.k}), (std::vector<int64_t>{3, L, 5}));
  ASSERT_EQ(lens.ids.size(), 3u * L * 5);
  // The expected lens, computed here in double from the folder's own files and not through the
  // core's head, softmax or top-k: LayerNorm(ln_f, eps 1e-5), logits = x tok_emb^T (tied
  // embeddings), softmax, ids by probability (ties: the smaller id).
  const Tensor ln_w = readNpyFloat((dir_ / "ln_f.weight.npy").string());
  const Tensor ln_b = readNpyFloat((dir_ / "ln_f.bias.npy").string());
  const Tensor emb = readNpyFloat((dir_ / "tok_emb.npy").string());
  ASSERT_EQ(emb.shape, (Shape{V, D}));
  for (int64_t layer = 0; layer < 3; ++layer) {
    for (int64_t t = 0; t < L; ++t) {
      const float* x = run.residuals.data.data() + (layer * L + t) * D;
      double mean = 0, var = 0;
      for (int64_t d = 0; d < D; ++d) mean += x[d];
      mean /= D;
      for (int64_t d = 0; d < D; ++d) var += (x[d] - mean) * (x[d] - mean);
      var /= D;
      std::vector<double> normed(D), logits(V), p(V);
      for (int64_t d = 0; d < D; ++d) normed[d] = (x[d] - mean) / std::sqrt(var + 1e-5) * ln_w.data[d] + ln_b.data[d];
      double top = -INFINITY, total = 0;
      for (int64_t v = 0; v < V; ++v) {
        logits[v] = 0;
        for (int64_t d = 0; d < D; ++d) logits[v] += normed[d] * emb.data[v * D + d];
        top = std::max(top, logits[v]);
      }
      for (int64_t v = 0; v < V; ++v) total += p[v] = std::exp(logits[v] - top);
      for (double& q : p) q /= total;
      if (layer == 2) {  // the last layer's head is the model's own output
        for (int64_t v = 0; v < V; ++v) EXPECT_NEAR(run.logits.row(t)[v], logits[v], 1e-4) << t << " " << v;
      }
      std::vector<int64_t> order(V);
      for (int64_t v = 0; v < V; ++v) order[v] = v;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      for (int64_t r = 0; r < 5; ++r) {
        EXPECT_EQ(lens.ids[lens.at(layer, t, r)], order[r]) << "layer " << layer << " position " << t << " rank " << r;
        EXPECT_NEAR(lens.probs[lens.at(layer, t, r)], p[order[r]], 1e-6)
            << "layer " << layer << " position " << t << " rank " << r;
      }
    }
  }
  const ViewModel view = viewFromModelRun(*model, run);
  ASSERT_EQ(view.lens.layers, 3);
  EXPECT_EQ(view.lens.at(2, 1).front().label, view.predictions[1].top.front().label);
  runner.keepResiduals(false);
  EXPECT_TRUE(runner.run("ab").residuals.empty());
  EXPECT_TRUE(viewFromModelRun(*model, runner.last()).lens.empty());
}

// The lens after incremental runs: residuals of the kept prefix are kept only when the run
// before kept them too (else the run computes from 0), and equal a fresh runner's bit for bit.
TEST_F(ModelFolder, LogitLensAfterIncrementalRunsEqualsAFreshRun) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  const std::string text = "cab\nabcab";
  ModelRunner fresh(model);
  const LogitLens want = lensOfTokens(fresh, tokenizeForModel(*model, text));
  const Tensor want_residuals = fresh.last().residuals;
  ModelRunner runner(model);
  runner.run(text.substr(0, 4));  // residuals off: the next run must start from 0
  const LogitLens after_off = lensOfTokens(runner, tokenizeForModel(*model, text));
  EXPECT_EQ(runner.last().first_computed, 0);
  EXPECT_EQ(after_off.ids, want.ids);
  EXPECT_EQ(after_off.probs, want.probs);
  lensOfTokens(runner, tokenizeForModel(*model, text.substr(0, 6)));  // shrink, then grow with residuals on
  const LogitLens grown = lensOfTokens(runner, tokenizeForModel(*model, text));
  EXPECT_EQ(runner.last().residuals.data, want_residuals.data);
  EXPECT_EQ(grown.ids, want.ids);
  EXPECT_EQ(grown.probs, want.probs);
}

TEST_F(ModelFolder, TrainingLogGivesCaptionAndNotableHeads) {
  const std::string dir = write();
  std::ofstream(fs::path(dir) / "training.json") << R"({"caption": "Trained on abc.",
      "notable_heads": {"previous_token": {"layer": 0, "head": 1, "score": 0.612},
                        "induction": {"layer": 1, "head": 0, "score": 0.9},
                        "broken": {"layer": "x"}}})";
  auto model = std::make_shared<const Model>(loadModel(dir));
  ModelRunner runner(model);
  const ViewModel view = viewFromModelRun(*model, runner.run("abc"));
  EXPECT_EQ(view.notes, "Trained on abc.");
  ASSERT_EQ(view.notable_heads.size(), 2u);
  EXPECT_EQ(view.notable_heads[0].text(), "L1H0 induction 0.90");
  EXPECT_EQ(view.notable_heads[1].text(), "L0H1 previous token 0.61");
  EXPECT_EQ((std::vector<int64_t>{view.notable_heads[1].layer, view.notable_heads[1].head}), (std::vector<int64_t>{0, 1}));
}

// Settings with source Model go through buildView like every other source.
TEST_F(ModelFolder, SettingsForModelBuildTheSameView) {
  const std::string dir = write();
  const Settings base;
  const Settings s = settingsForModel(base, dir + "/", "abca");
  EXPECT_EQ(s.source, InputSource::Model);
  EXPECT_EQ(s.model, fs::absolute(dir).lexically_normal().string());
  EXPECT_EQ(modelFolder(s), s.model);
  EXPECT_TRUE(isModelFolder(dir));
  EXPECT_FALSE(isModelFolder((fs::path(dir) / "config.json").string()));
  const auto view = buildView(s);
  auto model = std::make_shared<const Model>(loadModel(dir));
  ModelRunner runner(model);
  const ModelRun& run = runner.run("abca");
  ASSERT_EQ(view->layers, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t n = 0; n < 16; ++n)
        EXPECT_EQ(view->probs(layer, 0, h)[n], run.layers[layer].probs.data[h * 16 + n]);
  EXPECT_THROW(configureRun(s), InputError);  // a model runs whole, not as one attention layer
  Settings too_long = s;
  too_long.model_text = std::string(13, 'a');
  EXPECT_THROW(buildView(too_long), InputError);
}

// Switching models keeps what the user typed; untouched sample texts follow the model.
// The app's runner keeps the rows before the first changed character: the view says which
// rows the run computed (none when the text only got shorter).
TEST(ModelSource, ViewsComputeFromTheFirstChangedCharacter) {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  ASSERT_NE(it, shipped.end());
  FolderModelRunner runner(it->folder);
  const std::string text(70, 'a');
  struct Step {
    std::string text;
    int64_t first_computed;
  };
  for (const Step& step : {Step{text, 0}, Step{text + "b", 70}, Step{text + "b", 71}, Step{text.substr(0, 66), 66},
                           Step{"ab" + text.substr(0, 50), 1}, Step{text.substr(0, 66), 1}}) {
    const ViewModel view = runner.view(step.text);
    EXPECT_EQ(view.first_computed, step.first_computed) << step.text.size();
    EXPECT_EQ(view.L, static_cast<int64_t>(step.text.size()));
    const ViewModel fresh = viewOfModelFolder(it->folder, step.text);
    for (int64_t layer = 0; layer < view.layers; ++layer)
      EXPECT_EQ(0, std::memcmp(view.probs(layer, 0, 0), fresh.probs(layer, 0, 0),
                               sizeof(float) * view.H * view.L * view.L)) << step.text.size();
  }
}

// A view shares its run's traces with the runner (ModelRunner::shareTraces): whether the
// views before are dropped at once, the last one is held while the next runs (the app), or
// every one is kept, each view equals a fresh run of its text, values of every tensor of its
// traces, and keeps them while later runs write theirs elsewhere.
TEST(ModelSource, SharedTracesStayWhileLaterRunsWriteElsewhere) {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  ASSERT_NE(it, shipped.end());
  const std::string text(40, 'a');
  const std::vector<std::string> texts = {text, text + "b", text + "bc", text.substr(0, 30), "ab" + text.substr(0, 20),
                                          "ab" + text.substr(0, 20), text + "bcd"};
  auto same = [](const ViewModel& a, const ViewModel& b, const std::string& what) {
    ASSERT_EQ(a.layers, b.layers) << what;
    ASSERT_EQ(a.L, b.L) << what;
    for (int64_t l = 0; l < a.layers; ++l) {
      const AttentionTrace &x = *a.maps[l].trace, &y = *b.maps[l].trace;
      for (auto member : {&AttentionTrace::probs, &AttentionTrace::scores, &AttentionTrace::q, &AttentionTrace::k,
                          &AttentionTrace::v, &AttentionTrace::context_heads, &AttentionTrace::query, &AttentionTrace::output}) {
        EXPECT_EQ((x.*member).shape, (y.*member).shape) << what << " layer " << l;
        EXPECT_TRUE((x.*member).data == std::vector<float>((y.*member).data.begin(), (y.*member).data.end()))
            << what << " layer " << l;
      }
    }
  };
  const FolderWeights weights = loadFolderWeights(it->folder);
  auto fresh_view = [&](const std::string& t) { return FolderModelRunner(weights).view(t); };
  for (const size_t hold : {size_t{0}, size_t{1}, texts.size()}) {
    FolderModelRunner runner(weights);
    std::vector<ViewModel> held;  // the last `hold` views
    for (size_t n = 0; n < texts.size(); ++n) {
      held.push_back(runner.view(texts[n]));
      if (held.size() > hold) held.erase(held.begin());
      const std::string what = "hold " + std::to_string(hold) + ", text " + std::to_string(n);
      const ViewModel view = held.empty() ? runner.view(texts[n]) : ViewModel();
      same(held.empty() ? view : held.back(), fresh_view(texts[n]), what);
      for (size_t k = 0; k + 1 < held.size(); ++k)  // views before, after later runs
        same(held[k], fresh_view(texts[n + 1 + k - held.size()]), what + ", held " + std::to_string(k));
    }
    // A command's run after a view of the same text reads whole traces.
    const ModelRun& run = runner.run(runner.tokenize(texts.back()));
    const ViewModel fresh = fresh_view(texts.back());
    for (int64_t l = 0; l < fresh.layers; ++l)
      EXPECT_TRUE(run.layers[l].probs.data == std::vector<float>(fresh.maps[l].trace->probs.data.begin(),
                                                                 fresh.maps[l].trace->probs.data.end()));
  }
}

TEST(ModelSource, TextForModel) {
  EXPECT_EQ(textForModel(kDefaultModelText, "reverse-digits"), sampleText("reverse-digits"));
  EXPECT_EQ(textForModel(sampleText("reverse-digits"), "python-code"), kDefaultModelText);
  EXPECT_EQ(textForModel("my own text", "reverse-digits"), "my own text");
  EXPECT_EQ(textForModel("", "python-code"), kDefaultModelText);
  EXPECT_EQ(textForModel(kDefaultModelText, "some-folder"), kDefaultModelText);  // no sample: kept
  Settings missing;
  missing.source = InputSource::Model;
  missing.model = "no-such-shipped-model";
  EXPECT_THROW(modelFolder(missing), InputError);
  Settings typed;
  typed.model_text = "my own text";
  EXPECT_EQ(settingsForModel(typed, "/m/reverse-digits/").model_text, "my own text");
  EXPECT_EQ(settingsForModel(Settings(), "/m/reverse-digits/").model_text, sampleText("reverse-digits"));
  EXPECT_EQ(settingsForModel(Settings(), "/m/reverse-digits/").model, "/m/reverse-digits");
}

// A store's model keeps its name in the settings (resolved again at each load: an Ollama
// blob's path is a hash) and reads as that name; an unknown name is refused at once.
TEST(ModelSource, StoreNamesStayNamesAndReadAsThem) {
  char pattern[] = "/tmp/store-names-XXXXXX";
  const fs::path root = mkdtemp(pattern);
  const fs::path manifest = root / "manifests/registry.ollama.ai/library/tiny/latest";
  fs::create_directories(manifest.parent_path());
  fs::create_directories(root / "blobs");
  std::ofstream(root / "blobs" / ("sha256-" + std::string(64, 'a'))) << "GGUF";
  std::ofstream(manifest) << R"({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:)"
                          << std::string(64, 'a') << R"("}]})";
  setenv("OLLAMA_MODELS", root.c_str(), 1);
  const Settings s = settingsForModel(Settings(), "ollama:tiny:latest", "x");
  EXPECT_EQ(s.source, InputSource::Model);
  EXPECT_EQ(s.model, "ollama:tiny:latest");
  EXPECT_EQ(modelFolder(s), "ollama:tiny:latest");  // loadModel resolves it
  EXPECT_EQ(resolveModelName(s.model), (root / "blobs" / ("sha256-" + std::string(64, 'a'))).string());
  // Opened by its blob's path, it is kept as its name; a blob outside the store stays a path.
  const fs::path blob = root / "blobs" / ("sha256-" + std::string(64, 'a'));
  EXPECT_EQ(settingsForModel(Settings(), blob.string(), "x").model, "ollama:tiny:latest");
  const fs::path other = root / "other" / "blobs" / blob.filename();
  fs::create_directories(other.parent_path());
  fs::copy_file(blob, other);
  EXPECT_EQ(settingsForModel(Settings(), other.string(), "x").model, other.string());
  try {
    settingsForModel(Settings(), "ollama:tiny:v2", "");
    ADD_FAILURE() << "an unknown name was kept";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("ollama:tiny:v2: no such model in Ollama's models (", 0), 0u) << e.what();
  }
  unsetenv("OLLAMA_MODELS");
  fs::remove_all(root);
  EXPECT_EQ(storeLabel("ollama:tiny:latest"), "ollama: tiny:latest");
  EXPECT_EQ(storeLabel("ollama:tiny"), "ollama: tiny:latest");  // the tag the name resolves to
  EXPECT_EQ(storeLabel("ollama:library/tiny:q4"), "ollama: tiny:q4");
  EXPECT_EQ(storeLabel("hf:org/name"), "hf: org/name");
  EXPECT_EQ(storeLabel("/h/hub/models--org--name/snapshots/0123abc"), "hf: org/name");
  EXPECT_EQ(storeLabel("/m/tiny.gguf"), "");
  EXPECT_EQ(modelShortName("ollama:tiny:latest"), "ollama: tiny:latest");
  EXPECT_EQ(modelShortName("/m/folder/"), "folder");
  EXPECT_EQ(modelShortName("/m/tiny.gguf"), "tiny.gguf");
  EXPECT_EQ(modelShortName("python-code"), "python-code");
  LocalModel m{"ns/tiny:q4", "ollama", "/o/blobs/sha256-1", "gguf", "llama", 0, ""};
  EXPECT_EQ(modelNameOf(m), "ollama:ns/tiny:q4");
  m.source = "hf", m.name = "org/name";
  EXPECT_EQ(modelNameOf(m), "hf:org/name");
  m.source = "lmstudio";
  EXPECT_EQ(modelNameOf(m), "/o/blobs/sha256-1");  // no names of its own: the file
}

}  // namespace
}  // namespace attnscope

namespace attnscope {
namespace {

// The KV-cache stepper's numbers on a model run (issue 21): while step t computes its row the
// cache holds t + 1 positions of K and V per layer (a plain causal mask), kv_heads x head_dim
// float32 each; bytes = 2 * entries * kv_heads * head_dim * 4. Steps outside [0, L - 1] clamp.
TEST_F(ModelFolder, CacheFootprintOfAModelRun) {
  FolderModelRunner runner(write());
  const ViewModel view = runner.view("abcab");
  struct Row {
    int64_t step, entries;
  };
  for (const Row row : {Row{0, 1}, Row{2, 3}, Row{4, 5}, Row{8, 5}, Row{-1, 1}}) {
    const CacheFootprint cache = cacheFootprint(view, row.step);
    ASSERT_EQ(cache.layers.size(), 2u);
    for (const CacheLayer& layer : cache.layers) {
      EXPECT_EQ(layer.entries, row.entries);
      EXPECT_EQ(layer.evicted, 0);
      EXPECT_EQ(layer.kv_heads, 2);  // H = 2, no grouping
      EXPECT_EQ(layer.head_dim, 4);  // D / H = 8 / 2
      EXPECT_EQ(layer.bytes, static_cast<uint64_t>(2 * row.entries * 2 * 4 * 4));
    }
    EXPECT_EQ(cache.entries, 2 * row.entries);
    EXPECT_EQ(cache.bytes, static_cast<uint64_t>(2 * 2 * row.entries * 2 * 4 * 4));
  }
}

// A runner under sinks k = 1 + causal window W = 3 (CacheWindow) is the stepper's decoding of
// the same layer: at every step the footprint holds exactly the positions decodeWithKvCache
// kept (the sink, the window, the new token: k + W + 1 = 5 once full, k + W = 4 kept between
// steps), the evicted count is its evicted list's, and the runner's row equals the decoded
// row. Without the window the same text sees every key (the masks differ).
TEST_F(ModelFolder, CacheWindowIsTheStepperDecoding) {
  FolderModelRunner runner(write());
  const std::string text = "abcabcabca";
  const ViewModel full = runner.view(text);
  const CacheWindow cache{3, 1};
  runner.setCacheWindow(cache);
  const ViewModel view = runner.view(text);
  const int64_t L = view.L;
  ASSERT_EQ(L, 10);
  const Model& model = *runner.weights().model;
  for (int64_t layer = 0; layer < 2; ++layer) {
    const AttentionTrace& trace = *view.maps[layer].trace;
    AttentionInputs in = inputsOf(model.layers[layer]);
    in.query = in.key = in.value = trace.query;  // the layer's input rows ln1(x)
    AttentionOptions options;
    options.heads = 2;
    options.scale_mode = ScaleMode::InvSqrtD;
    options.mask = withCacheWindow(MaskSpec::parse("causal"), cache);
    EXPECT_EQ(options.mask.toString(), "causal+causal-window:3+sinks:1");
    const KvCacheRun decoded = decodeWithKvCache(in, options);
    EXPECT_EQ(decoded.capacity, 4);
    for (int64_t t = 0; t < L; ++t) {
      const CacheLayer c = cacheFootprint(view, t).layers[layer];
      const DecodeStep& step = decoded.steps[t];
      EXPECT_EQ(c.entries, static_cast<int64_t>(step.cached.size())) << t;
      EXPECT_EQ(c.entries, std::min<int64_t>(t + 1, 5)) << t;
      EXPECT_EQ(c.evicted, t == 0 ? 0 : static_cast<int64_t>(decoded.steps[t - 1].evicted.size())) << t;
      EXPECT_EQ(c.bytes, static_cast<uint64_t>(2 * c.entries * 2 * 4 * 4));
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t j = 0; j < L; ++j)
          EXPECT_NEAR(view.probs(layer, 0, h)[t * L + j], step.row_probs.data[h * L + j], 1e-5) << t << " " << j;
    }
    EXPECT_EQ(cacheFootprint(full, L - 1).layers[layer].entries, L);
  }
  const float* windowed = view.probs(1, 0, 0);
  EXPECT_FALSE(std::equal(windowed, windowed + L * L, full.probs(1, 0, 0)));
  runner.setCacheWindow(CacheWindow{});  // off again: the full causal maps, bit for bit
  const ViewModel again = runner.view(text);
  EXPECT_EQ(0, std::memcmp(again.probs(1, 0, 0), full.probs(1, 0, 0), sizeof(float) * 2 * L * L));
}

// The app's generation runs a second runner on the maps' weights: it points at the same
// tensors and allocates no copy of them (not even of the attention projections), and its
// rows are the first runner's, bit for bit.
TEST(ModelSource, ASecondRunnerSharesTheLoadedWeights) {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  ASSERT_NE(it, shipped.end());
  FolderModelRunner first(it->folder);
  const FolderWeights weights = first.weights();
  uint64_t attention_bytes = 0;
  for (const LayerWeights& b : weights.model->layers)
    for (const Linear* w : {&b.q, &b.k, &b.v, &b.o}) attention_bytes += w->weight.bytes();
  const size_t before = testing::heapBytesInUse();
  FolderModelRunner second(weights);
  const size_t grown = testing::heapGrowthSince(before);
  EXPECT_LT(grown, attention_bytes / 16) << "a runner on shared weights allocated " << grown << " bytes";
  EXPECT_EQ(second.weights().model.get(), weights.model.get());
  const ViewModel a = first.view("def f(x):"), b = second.view("def f(x):");
  EXPECT_EQ(0, std::memcmp(a.probs(1, 0, 0), b.probs(1, 0, 0), sizeof(float) * a.H * a.L * a.L));
}

// generate()'s on_run sees every run (the prompt's, then one per step, one row longer each)
// and stops the generation when it returns false (the app's Stop).
TEST_F(ModelFolder, GenerationRunsCanBeWatchedAndStopped) {
  FolderModelRunner runner(write());
  const CausalModel model = runner.causalModel();
  const ModelTokens prompt = runner.tokenize("ab");
  std::vector<int64_t> lengths;
  const auto watch = [&](int64_t stop_after) {
    lengths.clear();
    return generate(model, prompt, 5, SamplingSettings{}, {}, [&](const ModelRun& run) {
      lengths.push_back(static_cast<int64_t>(run.tokens.ids.size()));
      return static_cast<int64_t>(lengths.size()) < stop_after;
    });
  };
  Generation g = watch(100);
  EXPECT_EQ(g.stop, "tokens");
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 3, 4, 5, 6, 7}));
  g = watch(2);
  EXPECT_EQ(g.stop, "stopped");
  EXPECT_EQ(g.steps.size(), 1u);
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 3}));
  g = watch(1);
  EXPECT_EQ(g.stop, "stopped");
  EXPECT_TRUE(g.steps.empty());
}

// A generation far longer than its prompt (its rows' storage grows on the way): attentions
// [n_layers, 1, H, L, L] holds every row as a full forward over the final sequence gives it,
// nothing after the diagonal.
TEST_F(ModelFolder, LongGenerationKeepsEveryRowOfTheFullRun) {
  FolderModelRunner runner(write("chars", 100));
  const Generation g = generate(runner.causalModel(), runner.tokenize("ab"), 90, SamplingSettings{}, {});
  const int64_t L = 92;
  ASSERT_EQ(g.attentions.shape, (Shape{2, 1, 2, L, L}));
  ModelRunner full(std::make_shared<const Model>(loadModel(write("chars", 100))));
  const ModelRun& run = full.run(g.run.tokens);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < L; ++j) {
          const float got = g.attentions.data[(((layer * 2 + h) * L) + i) * L + j];
          const float want = j <= i ? run.layers[layer].probs.data[(h * L + i) * L + j] : 0.0f;
          ASSERT_NEAR(got, want, 1e-6f) << "layer " << layer << " head " << h << " row " << i << " key " << j;
        }
}

// A runner that keeps no score maps (a generation's): the same probabilities bit for bit, no
// scores, and it steps, appends and switches back (a full rerun when the kept maps differ).
TEST_F(ModelFolder, RunsWithoutScoresKeepTheSameProbabilities) {
  auto model = std::make_shared<const Model>(loadModel(write("chars", 100)));
  ModelRunner with(model), without(model);
  without.keepScores(false);
  for (const char* text : {"abcab", "abcabc", "abcaba"}) {
    SCOPED_TRACE(text);
    const ModelRun& a = with.run(tokensForRun(*model, text, Truncate::None, 0));
    const ModelRun& b = without.run(tokensForRun(*model, text, Truncate::None, 0));
    for (size_t l = 0; l < a.layers.size(); ++l) {
      EXPECT_EQ(b.layers[l].probs.data, a.layers[l].probs.data) << "layer " << l;
      EXPECT_TRUE(b.layers[l].scores.empty());
      EXPECT_FALSE(a.layers[l].scores.empty());
    }
    EXPECT_EQ(b.logits.row(b.logits.positions() - 1)[0], a.logits.row(a.logits.positions() - 1)[0]);
  }
  without.keepScores(true);  // back to both maps: the rows are recomputed, scores included
  const ModelRun& c = without.run(tokensForRun(*model, "abcaba", Truncate::None, 0));
  EXPECT_EQ(c.layers[0].scores.data, with.last().layers[0].scores.data);
  FolderModelRunner generating(write("chars", 100));
  generating.keepScores(false);
  const Generation g = generate(generating.causalModel(), generating.tokenize("ab"), 20, SamplingSettings{}, {});
  FolderModelRunner plain(write("chars", 100));
  const Generation reference = generate(plain.causalModel(), plain.tokenize("ab"), 20, SamplingSettings{}, {});
  EXPECT_EQ(g.attentions.data, reference.attentions.data);
}

// Interventions on a reused runner: each change recomputes from the first layer and row it
// touches (a mean ablation from row 0 once any row moved), the rest comes from the last run;
// the result equals a fresh runner's bit for bit, with and without the lens's residuals (and
// with them switched on and off between runs: each switch leaves the other store stale).
TEST_F(ModelFolder, ReusedRunnerUnderInterventionsMatchesFreshRunners) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  const std::vector<std::tuple<std::string, std::string, std::string>> steps = {
      {"abcab", "", ""},          {"abcab", "L1H0", ""},           {"abcab", "L1H1", ""},
      {"abcab", "L1H1", "L1H0:4-1"}, {"abcab", "L1H0:mean", "L1H0:4-1"}, {"abcab", "L0H1:mean", ""},
      {"abcabc", "L0H1:mean", ""}, {"abcaba", "L0H1:mean", "L1H1:4-2"}, {"abcaba", "", "L1H*:4-2"},
      {"ab", "L1H*", ""},         {"abcab", "", "L0H0:3-3"},       {"abcab", "", ""}};
  for (int residuals : {0, 1, 2}) {  // 2: the lens's residuals switched on and off from step to step
    ModelRunner reused(model);
    bool keep = residuals == 1;
    for (const auto& [text, ablate, knockout] : steps) {
      reused.keepResiduals(keep);
      keep = residuals == 2 ? !keep : keep;
      reused.setInterventions(parseInterventions(ablate, knockout));
      const ModelRun& again = reused.run(text);
      ModelRunner fresh(model);
      fresh.setInterventions(parseInterventions(ablate, knockout));
      const ModelRun& once = fresh.run(text);
      const std::string step = text + " " + ablate + " " + knockout;
      EXPECT_EQ(again.logits.dense().data, once.logits.dense().data) << step;
      for (size_t i = 0; i < 2; ++i) EXPECT_EQ(again.layers[i].probs.data, once.layers[i].probs.data) << step;
    }
  }
}

// A knocked-out cell is exactly 0 and its row renormalises over the other keys: the row's
// other probabilities are the plain run's divided by 1 - p(key).
TEST_F(ModelFolder, KnockoutRenormalisesTheRow) {
  auto model = std::make_shared<const Model>(loadModel(write()));
  ModelRunner plain(model), knocked(model);
  const Tensor before = plain.run("abcab").layers[0].probs;
  knocked.setInterventions(parseInterventions("", "L0H1:4-2"));
  const Tensor& after = knocked.run("abcab").layers[0].probs;
  const int64_t L = 5, row = (1 * L + 4) * L;
  EXPECT_EQ(after.data[row + 2], 0.0f);
  for (int64_t j = 0; j < L; ++j) {
    if (j == 2) continue;
    EXPECT_NEAR(after.data[row + j], before.data[row + j] / (1.0 - before.data[row + 2]), 1e-6) << j;
  }
  for (int64_t k = 0; k < L * L; ++k) EXPECT_EQ(after.data[k], before.data[k]) << k;  // head 0 untouched
}

TEST(Interventions, SpecsRoundTripAndNameTheBadItem) {
  const Interventions in = parseInterventions("L1H2,L0H1:mean,L3H*", "L1H0:9-2,L2H*:5-0");
  EXPECT_EQ(in.ablateSpec(), "L1H2,L0H1:mean,L3H*");
  EXPECT_EQ(in.knockoutSpec(), "L1H0:9-2,L2H*:5-0");
  EXPECT_EQ(in.describe(), "ablate L1H2,L0H1:mean,L3H*; knockout L1H0:9-2,L2H*:5-0");
  for (const auto& [ablate, knockout, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"L1H2:median", "", "--ablate: \"L1H2:median\": not LAYER HEAD"},
           {"H1", "", "--ablate: \"H1\": not LAYER HEAD"},
           {"", "L1H0:9", "--knockout: \"L1H0:9\": not LAYER HEAD:QUERY-KEY"},
           {"", "L1H0:9-x", "--knockout: \"L1H0:9-x\": not LAYER HEAD:QUERY-KEY"}}) {
    try {
      parseInterventions(ablate, knockout);
      ADD_FAILURE() << message;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace attnscope

// topIds against a full sort by the same rule (larger first, ties to the smaller id), on
// vectors with many ties, fewer entries than k, and k = 0.
TEST(TopIds, MatchesAFullSortWithTies) {
  std::mt19937 rng(7);
  for (const auto& [V, k, levels] : std::vector<std::tuple<int64_t, int64_t, int>>{
           {50, 5, 3}, {1000, 5, 1000000}, {7, 10, 2}, {1, 5, 1}, {64, 0, 4}, {300, 20, 5}}) {
    std::vector<double> p(static_cast<size_t>(V));
    std::uniform_int_distribution<int> level(0, levels - 1);
    for (double& x : p) x = level(rng) / double(levels);
    std::vector<int64_t> order(static_cast<size_t>(V));
    for (int64_t i = 0; i < V; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    order.resize(static_cast<size_t>(std::min(k, V)));
    EXPECT_EQ(attnscope::topIds(p, k), order) << "V=" << V << " k=" << k;
  }
}
