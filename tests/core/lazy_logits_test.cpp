// Logits only where they are looked at (model/model_run.h LogitRows): a run that unembeds
// some positions computes their 64-row blocks only, leaves the other rows NaN and marked not
// computed, and the rows computed later from the run's final residual rows (blockLogits, the
// app's more_predictions) equal the full run's bit for bit, for both kinds of model folder
// (the shipped attnscope-model/1 python-code model, and a random GPT-2 Hugging Face folder
// written here), also after an incremental run; a generation step unembeds its one row.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>

#include <nlohmann/json.hpp>

#include "config/model_source.h"
#include "heap_bytes.h"
#include "model/folder_runner.h"
#include "model/model.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kD = 16, kV = 300, kP = 160;  // the GPT-2 folder: width, vocabulary, context

// A random GPT-2 folder: config.json and model.safetensors (F32, Conv1D weights [in, out]).
void writeGpt2(const fs::path& folder) {
  const int64_t M = 4 * kD;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {{"wte.weight", {kV, kD}},
                                                                       {"wpe.weight", {kP, kD}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    for (const char* norm : {"ln_1", "ln_2"}) {
      shapes.push_back({h + norm + ".weight", {kD}});
      shapes.push_back({h + norm + ".bias", {kD}});
    }
    for (auto [name, in, out] : {std::tuple{"attn.c_attn", kD, 3 * kD}, {"attn.c_proj", kD, kD}, {"mlp.c_fc", kD, M},
                                 {"mlp.c_proj", M, kD}}) {
      shapes.push_back({h + name + ".weight", {in, out}});
      shapes.push_back({h + name + ".bias", {out}});
    }
  }
  shapes.push_back({"ln_f.weight", {kD}});
  shapes.push_back({"ln_f.bias", {kD}});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.4f);
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 4 * n}}};
    const bool norm_weight = name.find("ln_") != std::string::npos && name.find(".weight") != std::string::npos;
    for (int64_t k = 0; k < n; ++k) {
      const float x = normal(rng) + (norm_weight ? 1.0f : 0.0f);
      data.append(reinterpret_cast<const char*>(&x), sizeof x);
    }
  }
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << nlohmann::json{
      {"model_type", "gpt2"}, {"n_embd", kD}, {"n_layer", 2}, {"n_head", 2}, {"n_positions", kP},
      {"vocab_size", kV}, {"layer_norm_epsilon", 1e-5}, {"activation_function", "gelu_new"}}.dump();
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream file(folder / "model.safetensors", std::ios::binary);
  const uint64_t length = text.size();
  file.write(reinterpret_cast<const char*>(&length), 8);  // little-endian on every machine attnscope builds on
  file << text << data;
}

std::vector<int64_t> ids(int64_t L, int64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<int64_t> out(L);
  for (int64_t& id : out) id = static_cast<int64_t>(rng() % kV);
  return out;
}

// Row t of logits [L, V] equals row r of other [rows, V] bit for bit.
void expectSameRow(const Tensor& logits, int64_t t, const float* other_row) {
  const int64_t V = logits.dim(1);
  EXPECT_EQ(std::memcmp(&logits.data[t * V], other_row, V * sizeof(float)), 0) << "row " << t;
}

// A partial run: rows of the wanted blocks equal the full run's bit for bit, the others are
// not computed (no row); each block computed afterwards from the final residual rows
// (blockLogits) equals the full run's rows bit for bit.
void expectLazyRowsOfTheFullRun(const ModelRun& lazy, const Tensor& full, int64_t wanted_block, const RowHead& head) {
  const int64_t L = full.dim(0), V = full.dim(1);
  ASSERT_EQ(lazy.logits.positions(), L);
  ASSERT_EQ(lazy.logits.vocab(), V);
  for (int64_t t = 0; t < L; ++t) {
    const bool wanted = t / 64 == wanted_block;
    EXPECT_EQ(lazy.logits.computed(t), wanted) << t;
    if (wanted) expectSameRow(full, t, lazy.logits.row(t));
    else EXPECT_EQ(lazy.logits.row(t), nullptr) << t;
  }
  for (int64_t position = 0; position < L; position += 37) {
    const auto block = logitBlock(position, L);
    EXPECT_EQ(block.first, position / 64 * 64);
    EXPECT_EQ(block.second, std::min(L, block.first + 64));
    Tensor later({block.second - block.first, V});
    blockLogits(lazy.final_residual, block, head, later.data.data());
    for (int64_t t = block.first; t < block.second; ++t) expectSameRow(full, t, &later.data[(t - block.first) * V]);
  }
}

std::string pythonCodeFolder() {  // the shipped model (context 128: two row blocks); "" when not found
  for (const ShippedModel& m : shippedModels())
    if (m.name == "python-code") return m.folder;
  return "";
}

class LazyLogits : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/lazy-logits-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(LazyLogits, HfRunUnembedsTheWantedBlocksAndTheRestLaterBitForBit) {
  writeGpt2(root_ / "gpt2");
  auto model = std::make_shared<const Model>(loadModel((root_ / "gpt2").string(), false));
  const ModelTokens tokens = tokensFromIds(*model, ids(150, 1));
  ModelRunner full_runner(model), lazy_runner(model);
  const Tensor full = full_runner.run(tokens).logits.dense();  // [150, V] every row
  EXPECT_EQ(full_runner.run(tokens).logits_rows, 0);    // nothing changed, nothing wanted anew
  lazy_runner.logitRows({false, {-1}});                 // the last position: block [128, 150)
  const ModelRun& lazy = lazy_runner.run(tokens);
  EXPECT_EQ(lazy.logits_rows, 150 - 128);
  expectLazyRowsOfTheFullRun(lazy, full, 2, modelHead(*model));

  // The same text, another position wanted: its block only, nothing rerun.
  lazy_runner.logitRows({false, {5}});
  const ModelRun& again = lazy_runner.run(tokens);
  EXPECT_EQ(again.first_computed, 150);
  EXPECT_EQ(again.logits_rows, 64);
  for (int64_t t = 0; t < 64; ++t) expectSameRow(full, t, again.logits.row(t));

  // One more token: only its row is computed and unembedded (the rows before it keep their
  // logits); a fresh full run of the longer sequence gives the same rows.
  std::vector<int64_t> longer_ids = tokens.ids;
  longer_ids.push_back(7);
  const ModelTokens longer = tokensFromIds(*model, longer_ids);
  lazy_runner.logitRows({false, {-1}});
  const ModelRun& appended = lazy_runner.run(longer);
  EXPECT_EQ(appended.first_computed, 150);
  EXPECT_EQ(appended.logits_rows, 1);
  ModelRunner fresh(model);
  const Tensor full_longer = fresh.run(longer).logits.dense();
  for (int64_t t = 0; t < 151; ++t)
    if (t < 64 || t >= 128) expectSameRow(full_longer, t, appended.logits.row(t));
    else EXPECT_EQ(appended.logits.row(t), nullptr) << t;

  // A generation step (one row through the decode caches): only that row is unembedded, and
  // it agrees with a full run (over the decode cache: within float rounding).
  std::vector<int64_t> stepped_ids = longer_ids;
  stepped_ids.push_back(9);
  const ModelRun& stepped = lazy_runner.step(tokensFromIds(*model, stepped_ids));
  EXPECT_EQ(stepped.logits_rows, 1);
  ASSERT_TRUE(stepped.logits.computed(151));
  ModelRunner fresh_stepped(model);
  const Tensor full_stepped = fresh_stepped.run(tokensFromIds(*model, stepped_ids)).logits.dense();
  for (int64_t v = 0; v < kV; ++v) EXPECT_NEAR(stepped.logits.row(151)[v], full_stepped.data[151 * kV + v], 1e-4);
}

TEST_F(LazyLogits, ModelRunUnembedsTheWantedBlocksAndTheRestLaterBitForBit) {
  const std::string folder = pythonCodeFolder();
  ASSERT_FALSE(folder.empty());
  auto model = std::make_shared<const Model>(loadModel(folder));
  std::string text;
  for (int i = 0; text.size() < 100; ++i) text += "x" + std::to_string(i) + " = x" + std::to_string(i + 1) + "\n";
  text.resize(100);
  ModelRunner full_runner(model), lazy_runner(model);
  const Tensor full = full_runner.run(text).logits.dense();
  lazy_runner.logitRows({false, {10}});  // block [0, 64)
  const ModelRun& lazy = lazy_runner.run(text);
  EXPECT_EQ(lazy.logits_rows, 64);
  expectLazyRowsOfTheFullRun(lazy, full, 0, modelHead(*model));
}

// A sweep's runs (LogitRows::blocks false): the positions alone, not their blocks, each row
// the full run's bit for bit; a later run with another position adds that row only.
TEST_F(LazyLogits, ExactPositionsUnembedThoseRowsOnly) {
  const std::string folder = pythonCodeFolder();
  ASSERT_FALSE(folder.empty());
  auto model = std::make_shared<const Model>(loadModel(folder));
  const std::string text = std::string(kDefaultModelText).substr(0, 90);
  ModelRunner full_runner(model), exact_runner(model);
  const Tensor full = full_runner.run(text).logits.dense();
  const int64_t V = model->config.vocab;
  exact_runner.logitRows({false, {10, -1}, false});
  const ModelRun& exact = exact_runner.run(text);
  EXPECT_EQ(exact.logits_rows, 2);
  for (int64_t t = 0; t < 90; ++t) {
    ASSERT_EQ(exact.logits.computed(t), t == 10 || t == 89) << t;
    if (exact.logits.computed(t)) {
      EXPECT_EQ(0, std::memcmp(exact.logits.row(t), &full.data[t * V], V * sizeof(float))) << t;
    }
  }
  exact_runner.logitRows({false, {11}, false});
  EXPECT_EQ(exact_runner.run(text).logits_rows, 1);  // nothing else changed: row 11 now
  EXPECT_EQ(0, std::memcmp(exact_runner.last().logits.row(11), &full.data[11 * V], V * sizeof(float)));
}

// The app's path: a view that unembedded the last position only has predictions there;
// more_predictions gives any other position's, equal to a full view's.
TEST_F(LazyLogits, ViewComputesOtherPositionsPredictionsOnDemand) {
  const std::string folder = pythonCodeFolder();
  ASSERT_FALSE(folder.empty());
  const std::string text = std::string(kDefaultModelText).substr(0, 90);
  const ViewModel full = FolderModelRunner(folder).view(text);
  EXPECT_FALSE(full.more_predictions);
  EXPECT_EQ(full.logits_rows, 90);
  FolderModelRunner runner(folder);
  const ViewModel lazy = runner.view(text, nullptr, LogitRows{false, {-1}});
  EXPECT_EQ(lazy.logits_rows, 90 - 64);
  ASSERT_TRUE(lazy.more_predictions);
  for (int64_t t = 0; t < 90; ++t) EXPECT_EQ(lazy.predictions[t].top.empty(), t < 64) << t;
  const PredictionBlock block = lazy.more_predictions->block(20);
  ASSERT_EQ(block.first, 0);
  ASSERT_EQ(block.rows.size(), 64u);
  for (int64_t t = 0; t < 64; ++t) {
    const NextTokenPredictions& want = full.predictions[t];
    const NextTokenPredictions& got = block.rows[t];
    ASSERT_EQ(got.top.size(), want.top.size());
    for (size_t r = 0; r < want.top.size(); ++r) {
      EXPECT_EQ(got.top[r].label, want.top[r].label);
      EXPECT_EQ(got.top[r].prob, want.top[r].prob);
    }
    EXPECT_EQ(got.actual, want.actual);
    EXPECT_EQ(got.actual_prob, want.actual_prob);
    EXPECT_EQ(got.actual_rank, want.actual_rank);
  }
}

// A byte-level BPE tokenizer.json without merges for printable ASCII other than the space:
// each character is its own token, id = its code (GPT-2's byte alphabet leaves them as they are).
void writeAsciiTokenizer(const fs::path& folder) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int c = 33; c < 127; ++c) vocab[std::string(1, static_cast<char>(c))] = c;
  const nlohmann::json level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const nlohmann::json tok = {{"version", "1.0"}, {"added_tokens", nlohmann::json::array()}, {"normalizer", nullptr},
                              {"pre_tokenizer", level}, {"post_processor", level}, {"decoder", level},
                              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream(folder / "tokenizer.json") << tok.dump();
}

void expectSameColumn(const LensTable& whole, const LensColumns& c, int64_t t) {
  for (int64_t l = 0; l < whole.layers; ++l) {
    const std::vector<TokenGuess>& want = whole.at(l, t);
    const std::vector<TokenGuess>& got = c.cells[l * c.count + t - c.first];
    ASSERT_EQ(got.size(), want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      EXPECT_EQ(got[r].label, want[r].label) << "layer " << l << " position " << t;
      EXPECT_EQ(got[r].prob, want[r].prob) << "layer " << l << " position " << t;
    }
  }
}

// The logit lens past its budget, for both kinds of folder: without on-demand it is off with
// the reason; with it, the view keeps no table but a LaterLens whose columns (blocks of the
// positions the budget allows) equal, bit for bit, the whole lens a run within budget makes.
TEST_F(LazyLogits, LensColumnsOnDemandEqualTheWholeLens) {
  writeGpt2(root_ / "gpt2");
  writeAsciiTokenizer(root_ / "gpt2");
  const std::string text = "def_area(w,h):return_w*h;print(area(3,4))#the_end!";  // 50 tokens in both
  for (const std::string& folder : {pythonCodeFolder(), (root_ / "gpt2").string()}) {
    SCOPED_TRACE(folder);
    ASSERT_FALSE(folder.empty());
    const ViewModel whole = FolderModelRunner(folder).view(text, nullptr, LogitRows{false, {-1}}, {}, true);
    ASSERT_FALSE(whole.lens.cells.empty());  // within the default budget: made with the run
    ASSERT_EQ(whole.lens.positions, 50);
    EXPECT_FALSE(whole.lens.later);
    FolderModelRunner runner(folder);
    runner.setLensBudget(1.0);  // below one position's cost: one column per call
    const ViewModel off = runner.view(text, nullptr, LogitRows{false, {-1}}, {}, false);
    EXPECT_TRUE(off.lens.empty());
    EXPECT_NE(off.lens.off_reason.find("open the Logit lens tab"), std::string::npos) << off.lens.off_reason;
    const ViewModel later = runner.view(text, nullptr, LogitRows{false, {-1}}, {}, true);
    ASSERT_TRUE(later.lens.later);
    EXPECT_TRUE(later.lens.cells.empty());
    EXPECT_FALSE(later.lens.empty());
    EXPECT_EQ(later.lens.off_reason, "");
    EXPECT_EQ(later.lens.layers, whole.lens.layers);
    EXPECT_EQ(later.lens.positions, 50);
    EXPECT_EQ(later.lens.later->block, 1);
    for (int64_t t : {0, 17, 49}) {
      const LensColumns c = later.lens.later->columns(t);
      ASSERT_EQ(c.first, t);
      ASSERT_EQ(c.count, 1);
      expectSameColumn(whole.lens, c, t);
    }
  }
  // The GPT-2 folder's position costs 3 x 16 x 300 multiply-adds: a budget of 7.5 positions
  // gives blocks of 7, the last one cut at the text's end.
  FolderModelRunner runner((root_ / "gpt2").string());
  const ViewModel whole = runner.view(text, nullptr, LogitRows{false, {-1}}, {}, true);
  runner.setLensBudget(7.5 * 3 * kD * kV);
  const ViewModel later = runner.view(text, nullptr, LogitRows{false, {-1}}, {}, true);
  ASSERT_TRUE(later.lens.later);
  EXPECT_EQ(later.lens.later->block, 7);
  for (auto [position, first, count] : {std::tuple{45, 42, 7}, {49, 49, 1}, {6, 0, 7}}) {
    const LensColumns c = later.lens.later->columns(position);
    ASSERT_EQ(std::make_pair(c.first, c.count), std::make_pair(int64_t{first}, int64_t{count}));
    for (int64_t t = first; t < first + count; ++t) expectSameColumn(whole.lens, c, t);
  }
}

// A generation's lens columns (FolderModelRunner::lensColumns on a run that kept its
// residuals): a full run's equal the whole lens bit for bit; a step's new column (decoded
// through the KV cache) has the same top-1 tokens as a fresh run of the longer text; the
// step's view (viewOf) makes no whole lens of its own.
TEST_F(LazyLogits, LensColumnsOfAGenerationRun) {
  writeGpt2(root_ / "gpt2");
  writeAsciiTokenizer(root_ / "gpt2");
  const std::string text = "def_area(w,h):return_w*h;";
  for (const std::string& folder : {pythonCodeFolder(), (root_ / "gpt2").string()}) {
    SCOPED_TRACE(folder);
    FolderModelRunner runner(folder);
    const ViewModel whole = FolderModelRunner(folder).view(text + "x");
    ASSERT_FALSE(whole.lens.cells.empty());
    runner.keepResiduals(true);
    const CausalModel model = runner.causalModel(StepMaps::Keep);
    ModelTokens tokens = runner.tokenize(text);
    const LensColumns all = runner.lensColumns(model.run(tokens), 0, static_cast<int64_t>(text.size()));
    for (int64_t t = 0; t < all.count; ++t) expectSameColumn(whole.lens, all, t);
    EXPECT_TRUE(runner.lensFits(all.count));
    model.append(tokens, runner.tokenize("x").ids.back());
    const int64_t last = static_cast<int64_t>(text.size());
    const ModelRun& stepped = model.step(tokens);
    EXPECT_TRUE(runner.viewOf(stepped).lens.empty());  // no whole lens per step from the kept residuals
    const LensColumns step = runner.lensColumns(stepped, last, 1);
    for (int64_t l = 0; l < whole.lens.layers; ++l)
      EXPECT_EQ(step.cells[l].front().label, whole.lens.at(l, last).front().label) << "layer " << l;
  }
}

// Rows not computed take no memory: a run's logits are stored per 64-row block once one of
// its rows is written (1000 positions x 50000 would be 200 MB whole).
TEST(RunLogitsStorage, OnlyBlocksWithComputedRowsAreStored) {
  const int64_t L = 1000, V = 50000;
  RunLogits logits;
  const size_t before = testing::heapBytesInUse();
  logits.resize(L, V, 0);
  float* rows = logits.rowsToWrite(960, 1000);  // the last block, [960, 1000)
  for (int64_t n = 0; n < 40 * V; ++n) rows[n] = static_cast<float>(n % 7);
  EXPECT_LT(testing::heapGrowthSince(before), static_cast<size_t>(2 * 64 * V * sizeof(float)));
  EXPECT_TRUE(logits.computed(960));
  EXPECT_FALSE(logits.computed(959));
  EXPECT_EQ(logits.row(0), nullptr);
  EXPECT_EQ(logits.row(961)[3], static_cast<float>((V + 3) % 7));
  {
    const Tensor dense = logits.dense();  // NaN rows where not computed
    ASSERT_EQ(dense.shape, (Shape{L, V}));
    EXPECT_TRUE(std::isnan(dense.data[959 * V]));
    EXPECT_EQ(dense.data[961 * V + 3], logits.row(961)[3]);
  }
  logits.resize(990, V, 990);  // shorter: the rows kept stay
  EXPECT_TRUE(logits.computed(989));
  logits.resize(995, V, 970);  // longer again from 970: rows from there are not computed
  EXPECT_TRUE(logits.computed(969));
  EXPECT_FALSE(logits.computed(970));
  logits.resize(900, V, 900);  // the stored block is past the end: freed
  EXPECT_LT(testing::heapGrowthSince(before), static_cast<size_t>(V * sizeof(float)));
}

}  // namespace
}  // namespace attnscope
