// Loading a Hugging Face folder (model/hf_model.h): progress follows the bytes kept in memory
// (from 0 to 1, never backwards) and returning false cancels the load; the memory
// rule refuses a folder from its safetensors header alone, before the file's data (a file
// that stops right after its header is refused by the memory rule, not as truncated). The
// folder is a tiny random Llama written here (config.json, one F32 safetensors file).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/model_source.h"
#include "heap_bytes.h"
#include "model/folder_runner.h"
#include "model/model.h"
#include "safetensors_writer.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
constexpr int64_t D = 8, M = 16, V = 16;

// Shapes of a 2-layer Llama with tied embeddings (nn.Linear weights [out, in]).
TensorShapes llamaTensors() {
  TensorShapes t = {{"model.embed_tokens.weight", {V, D}},
                                                                  {"model.norm.weight", {D}}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {D}});
    t.push_back({p + "post_attention_layernorm.weight", {D}});
    for (const char* n : {"q", "k", "v", "o"}) t.push_back({p + "self_attn." + n + "_proj.weight", {D, D}});
    t.push_back({p + "mlp.gate_proj.weight", {M, D}});
    t.push_back({p + "mlp.up_proj.weight", {M, D}});
    t.push_back({p + "mlp.down_proj.weight", {D, M}});
  }
  return t;
}

void writeLlamaConfig(const fs::path& folder) {
  fs::create_directories(folder);
  std::ofstream(folder / "config.json")
      << R"({"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 2, "intermediate_size": 16, "vocab_size": 16, "max_position_embeddings": 16,
            "rms_norm_eps": 1e-5, "tie_word_embeddings": true})";
}

// Writes FOLDER/config.json and model.safetensors (F32, element k of a tensor = k / 1000);
// with_data = false stops the file right after its header. Returns the float32 bytes.
uint64_t writeLlama(const fs::path& folder, bool with_data) {
  writeLlamaConfig(folder);
  return writeF32Safetensors(folder / "model.safetensors", llamaTensors(),
                             [](int64_t k) { return static_cast<float>(k) / 1000.0f; }, with_data);
}

// Values exact in bfloat16 (8 significant bits): the same model in BF16 and in F32.
float bf16Exact(int64_t k) { return static_cast<float>((k * 37) % 29 - 14) / 64.0f; }

class HfLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hf-load-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  void TearDown() override {
    fs::remove_all(root_);
    unsetenv("ATTNSCOPE_MEMORY_BYTES");
  }
  fs::path root_;
};

TEST_F(HfLoad, ProgressRunsFromZeroToOneAndTheWeightsArrive) {
  const fs::path folder = root_ / "m";
  writeLlama(folder, true);
  std::vector<double> seen;
  const Model m = loadModel(folder.string(), false, [&](double f) {
    seen.push_back(f);
    return true;
  });
  ASSERT_EQ(seen.size(), llamaTensors().size() + 1);  // once before, once after each tensor
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_EQ(seen.back(), 1.0);
  for (size_t k = 1; k < seen.size(); ++k) EXPECT_GT(seen[k], seen[k - 1]);
  ASSERT_EQ(m.embed.shape, (Shape{V, D}));
  for (int64_t k = 0; k < V * D; ++k) EXPECT_EQ(m.embed.at(k), static_cast<float>(k) / 1000.0f);  // tied: in panels
}

TEST_F(HfLoad, ReturningFalseCancels) {
  const fs::path folder = root_ / "m";
  writeLlama(folder, true);
  int calls = 0;
  EXPECT_THROW(loadModel(folder.string(), false, [&](double) { return ++calls < 4; }), Cancelled);
  EXPECT_EQ(calls, 4);  // stopped at the first false
}

// The float32 bytes the model takes in memory: every matrix (each a linear map or the tied
// embedding) in the row GEMM's panels, its rows padded to whole blocks of 64.
uint64_t residentBytes() {
  uint64_t bytes = 0;
  for (const auto& [name, shape] : llamaTensors())
    bytes += sizeof(float) * (shape.size() == 2 ? static_cast<uint64_t>((shape[0] + 63) / 64 * 64 * shape[1])
                                                : static_cast<uint64_t>(shape[0]));
  return bytes;
}

TEST_F(HfLoad, MemoryRuleComesBeforeTheData) {
  const fs::path folder = root_ / "m";
  const uint64_t stored = writeLlama(folder, false);  // the header only: the data is missing
  const uint64_t bytes = residentBytes();
  EXPECT_EQ(stored, 4u * (2 * (4 * 64 + 3 * 128 + 16) + 128 + 8));  // the file's float32 values
  EXPECT_EQ(bytes, 4u * (2 * (6 * 512 + 1024 + 16) + 512 + 8));    // in panels: 64 rows each
  setenv("ATTNSCOPE_MEMORY_BYTES", std::to_string(bytes - 1).c_str(), 1);
  try {
    loadModel(folder.string(), false);
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(folder.string() + ": the weights in memory (0 MiB) needs ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("(ATTNSCOPE_MEMORY_BYTES)"), std::string::npos) << e.what();
  }
  // Within the budget the same file is refused as what it is: its data is missing.
  setenv("ATTNSCOPE_MEMORY_BYTES", std::to_string(bytes).c_str(), 1);
  try {
    loadModel(folder.string(), false);
    FAIL() << "loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors: truncated: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("past the 0 bytes of data"), std::string::npos) << e.what();
  }
}

// The Open dialog's check (checkModelFolder): headers and file sizes, no data. A value no
// load accepts (a NaN) passes it and fails the load; a truncated file and a folder of
// PyTorch pickles fail it with loadModel's own message.
TEST_F(HfLoad, CheckModelFolderReadsHeadersAndSizesOnly) {
  const fs::path folder = root_ / "m";
  writeLlama(folder, true);
  EXPECT_NO_THROW(checkModelFolder(folder.string()));
  const fs::path file = folder / "model.safetensors";
  const uint64_t size = fs::file_size(file);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 4));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    f.write(reinterpret_cast<const char*>(&nan), sizeof nan);
  }
  EXPECT_NO_THROW(checkModelFolder(folder.string()));
  EXPECT_THROW(loadModel(folder.string(), false), InputError);
  const auto message = [&] {
    try {
      checkModelFolder(folder.string());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  fs::resize_file(file, size - 1);
  EXPECT_EQ(message().rfind(file.string() + ": truncated: " + std::to_string(size - 1) + " bytes where its header needs " +
                                std::to_string(size) + " (tensor ", 0),
            0u)
      << message();
  fs::rename(file, folder / "pytorch_model.bin");
  EXPECT_EQ(message(), (folder / "pytorch_model.bin").string() +
                           ": PyTorch pickles are not read, only safetensors: write them with model.save_pretrained(\"" +
                           folder.string() + "\", safe_serialization=True) (model.safetensors)");
}

// The app's generation runs a second runner on the weights its maps' runner loaded: the same
// tensors, and no copy of them is allocated (the attention projections included); both
// runners give the same rows.
TEST_F(HfLoad, ASecondRunnerSharesTheLoadedWeights) {
  const fs::path folder = root_ / "m";
  writeLlama(folder, true);
  FolderModelRunner first(folder.string());
  const FolderWeights weights = first.weights();
  ASSERT_TRUE(weights.model);
  uint64_t attention_bytes = 0;
  for (const LayerWeights& layer : weights.model->layers)
    for (const Linear* w : {&layer.q, &layer.k, &layer.v, &layer.o})
      attention_bytes += w->weight.bytes();
  const size_t before = testing::heapBytesInUse();
  FolderModelRunner second(weights);
  const size_t grown = testing::heapGrowthSince(before);
  EXPECT_LT(grown, attention_bytes / 2) << "a runner on shared weights allocated " << grown << " bytes";
  EXPECT_EQ(second.weights().model.get(), weights.model.get());
  ModelRunner a(weights.model), b(weights.model);
  const ModelTokens ids = tokensFromIds(*weights.model, {1, 2, 3, 4});
  const Tensor probs = a.run(ids).layers[1].probs;
  EXPECT_EQ(probs.data, b.run(ids).layers[1].probs.data);
}

// BF16 matrices stay BF16 in memory (half the bytes), norms are float32, and the model runs
// with the bits of the same values stored as F32: the row GEMM widens them exactly.
TEST_F(HfLoad, Bf16MatricesStayBf16AndRunLikeTheirFloat32Widening) {
  const fs::path bf16 = root_ / "bf16", f32 = root_ / "f32";
  writeLlamaConfig(bf16);
  writeLlamaConfig(f32);
  writeSafetensors(bf16 / "model.safetensors", llamaTensors(), bf16Exact, true, "BF16");
  writeSafetensors(f32 / "model.safetensors", llamaTensors(), bf16Exact, true, "F32");
  auto a = std::make_shared<const Model>(loadModel(bf16.string(), false));
  auto b = std::make_shared<const Model>(loadModel(f32.string(), false));
  for (const Linear* l : {&a->layers[0].q, &a->layers[1].down, &a->layers[1].gate}) {
    EXPECT_TRUE(l->weight.f32.empty());
    EXPECT_TRUE(l->weight.panels);
    EXPECT_EQ(l->weight.bf16.size(), static_cast<size_t>(panelCount(l->weight.dim(0)) * kPanelWidth * l->weight.dim(1)));
  }
  const uint64_t padded = static_cast<uint64_t>(panelCount(V) * kPanelWidth * D);  // the tied head's panels
  EXPECT_EQ(a->embed.bytes(), padded * 2);
  EXPECT_EQ(b->embed.bytes(), padded * 4);
  EXPECT_EQ(a->layers[0].attn_norm.weight.data.size(), static_cast<size_t>(D));  // norms as float32
  for (int64_t k = 0; k < V * D; ++k) ASSERT_EQ(a->embed.at(k), b->embed.at(k)) << k;
  ModelRunner ra(a), rb(b);
  const ModelTokens ids = tokensFromIds(*a, {3, 1, 4, 1, 5, 9, 2, 6});
  const ModelRun& x = ra.run(ids);
  const ModelRun& y = rb.run(ids);
  EXPECT_EQ(x.logits.dense().data, y.logits.dense().data);
  for (int64_t layer = 0; layer < 2; ++layer) EXPECT_EQ(x.layers[layer].probs.data, y.layers[layer].probs.data) << layer;
}

// A Phi-3 whose longrope's original context is 8 (max_position_embeddings 32), short and long
// factors apart. Typing keeps the rows of an unchanged prefix, but past the original context
// every position rotates by the long factors: a run whose text crosses it either way (typed,
// deleted, or a generation step) computes every row again and equals a fresh run bit for bit;
// on one side the kept rows are reused as before.
TEST_F(HfLoad, TypingPastLongRopesOriginalContextEqualsAFreshRun) {
  const fs::path folder = root_ / "phi3";
  fs::create_directories(folder);
  std::ofstream(folder / "config.json")
      << R"({"model_type": "phi3", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 16, "max_position_embeddings": 32,
            "original_max_position_embeddings": 8, "rope_theta": 100.0, "rms_norm_eps": 1e-5,
            "tie_word_embeddings": false, "rope_scaling": {"type": "longrope", "short_factor": [1, 1.5, 2, 2.5],
            "long_factor": [3, 5, 7, 9]}})";
  TensorShapes t = {{"model.embed_tokens.weight", {V, 16}}, {"model.norm.weight", {16}}, {"lm_head.weight", {V, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) t.push_back({p + n + ".weight", {16}});
    t.push_back({p + "self_attn.qkv_proj.weight", {32, 16}});
    t.push_back({p + "self_attn.o_proj.weight", {16, 16}});
    t.push_back({p + "mlp.gate_up_proj.weight", {32, 16}});
    t.push_back({p + "mlp.down_proj.weight", {16, 16}});
  }
  writeF32Safetensors(folder / "model.safetensors", t,
                      [](int64_t k) { return 0.5f * static_cast<float>(std::sin(0.37 * static_cast<double>(k) + 1.0)); });
  auto model = std::make_shared<const Model>(loadModel(folder.string(), false));
  const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
  auto tokens = [&](size_t L) { return tokensFromIds(*model, {ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(L)}); };
  auto sameAsFresh = [&](const ModelRun& run, const std::string& what) {
    ModelRunner fresh_runner(model);
    const ModelRun& fresh = fresh_runner.run(run.tokens);
    EXPECT_EQ(run.logits.dense().data, fresh.logits.dense().data) << what;
    for (int64_t layer = 0; layer < 2; ++layer) EXPECT_EQ(run.layers[layer].probs.data, fresh.layers[layer].probs.data) << what;
  };
  ModelRunner live(model);
  Tensor short_probs;  // layer 1 at 8 tokens (short factors)
  struct Typed { size_t L; int64_t first_computed; };
  for (const Typed typed : {Typed{6, 0}, Typed{8, 6}, Typed{9, 0}, Typed{12, 9}, Typed{7, 0}, Typed{8, 7}}) {
    const std::string what = std::to_string(typed.L) + " tokens";
    const ModelRun& run = live.run(tokens(typed.L));
    EXPECT_EQ(run.first_computed, typed.first_computed) << what;
    sameAsFresh(run, what);
    if (typed.L == 8) short_probs = run.layers[1].probs;
  }
  const ModelRun& stepped = live.step(tokens(9), StepMaps::Keep);  // the generation step across: a whole run
  EXPECT_EQ(stepped.first_computed, 0);
  sameAsFresh(stepped, "a step to 9 tokens");
  // The rows of the first 8 positions moved: the long factors rotate every position.
  const Tensor& long_probs = stepped.layers[1].probs;  // [1, H, 9, 9]
  double moved = 0.0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j <= i; ++j)
        moved = std::max(moved, std::abs(double{long_probs.data[(h * 9 + i) * 9 + j]} - short_probs.data[(h * 8 + i) * 8 + j]));
  EXPECT_GT(moved, 1e-3);
}

// The memory rule counts what is kept: 2 bytes a BF16 matrix value (its panels' padding
// too), 4 a norm's.
TEST_F(HfLoad, MemoryRuleCountsBf16MatricesAtTwoBytes) {
  const fs::path folder = root_ / "m";
  writeLlamaConfig(folder);
  writeSafetensors(folder / "model.safetensors", llamaTensors(), bf16Exact, true, "BF16");
  uint64_t kept = 0;
  for (const auto& [name, shape] : llamaTensors())
    kept += shape.size() == 1 ? 4 * static_cast<uint64_t>(shape[0]) : 2 * static_cast<uint64_t>(panelCount(shape[0]) * kPanelWidth * shape[1]);
  EXPECT_EQ(kept, residentBytes() / 2 + 2 * (2 * 16 + 8));  // half the float32 count, but norms stay at 4 bytes
  setenv("ATTNSCOPE_MEMORY_BYTES", std::to_string(kept).c_str(), 1);
  EXPECT_NO_THROW(loadModel(folder.string(), false));
  setenv("ATTNSCOPE_MEMORY_BYTES", std::to_string(kept - 1).c_str(), 1);
  EXPECT_THROW(loadModel(folder.string(), false), InputError);
}

// A NaN in a BF16 tensor is refused naming the file, the tensor and the index.
TEST_F(HfLoad, NanInABf16TensorIsRefused) {
  const fs::path folder = root_ / "m";
  writeLlamaConfig(folder);
  writeSafetensors(folder / "model.safetensors", llamaTensors(), [](int64_t k) { return k == 77 ? std::nanf("") : bf16Exact(k); },
                   true, "BF16");
  try {
    loadModel(folder.string(), false);
    FAIL() << "loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind((folder / "model.safetensors").string() + ": tensor \"", 0), 0u) << what;
    EXPECT_NE(what.find("holds a NaN or infinite value at index 77"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace attnscope
