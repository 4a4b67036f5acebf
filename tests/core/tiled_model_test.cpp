// A model run beyond the full path's budget (ModelRunner::keepMapsWithin; AttentionOptions::
// keep_maps false) keeps each layer's Q and K (after RoPE) and the softmax normalisers
// instead of its maps; the tiled path (attention/tiles.h) then computes any window of them.
// Table-driven over families (random Hugging Face folders written here): GPT-2 (learned
// positions, fused Conv1D q/k/v), Llama (GQA + RoPE), Mistral (sliding window) and Gemma 2
// (soft-capped scores, custom scale, windows on alternate layers). For each: the tiled run's
// logits equal the full run's bit for bit; exact tiles (the whole map, the diagonal, far-off
// and fully masked windows, one cell), pooled windows at several zoom levels and the overview
// equal the full path's maps within 1e-6; the head table of the tiled view equals the full
// view's (metrics within 1e-6, relative above 1; the same groups), pooled with progress and
// cancel; an appended text equals a fresh run bit for bit, also across the budget's edge.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/head_table.h"
#include "analysis/layer_maps.h"
#include "attention/tiles.h"
#include "config/model_source.h"
#include "model/folder_runner.h"
#include "model/model.h"
#include "safetensors_writer.h"
#include "view/downsample.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

constexpr int64_t D = 16, M = 24, V = 40, P = 256, kLayers = 2;

// The tensors of a Llama-layout model (llama, mistral: extra_norms false; gemma2: true).
TensorShapes llamaLayout(int64_t kv_width, bool extra_norms) {
  TensorShapes t = {{"model.embed_tokens.weight", {V, D}}, {"model.norm.weight", {D}}};
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {D}});
    t.push_back({p + "post_attention_layernorm.weight", {D}});
    if (extra_norms) {
      t.push_back({p + "pre_feedforward_layernorm.weight", {D}});
      t.push_back({p + "post_feedforward_layernorm.weight", {D}});
    }
    t.push_back({p + "self_attn.q_proj.weight", {D, D}});
    t.push_back({p + "self_attn.k_proj.weight", {kv_width, D}});
    t.push_back({p + "self_attn.v_proj.weight", {kv_width, D}});
    t.push_back({p + "self_attn.o_proj.weight", {D, D}});
    t.push_back({p + "mlp.gate_proj.weight", {M, D}});
    t.push_back({p + "mlp.up_proj.weight", {M, D}});
    t.push_back({p + "mlp.down_proj.weight", {D, M}});
  }
  return t;
}

// GPT-2 as the hub saves it: no "transformer." prefix, Conv1D weights [in, out].
TensorShapes gpt2Layout() {
  TensorShapes t = {{"wte.weight", {V, D}}, {"wpe.weight", {P, D}}, {"ln_f.weight", {D}}, {"ln_f.bias", {D}}};
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    for (const char* norm : {"ln_1", "ln_2"}) {
      t.push_back({p + norm + ".weight", {D}});
      t.push_back({p + norm + ".bias", {D}});
    }
    t.push_back({p + "attn.c_attn.weight", {D, 3 * D}});
    t.push_back({p + "attn.c_attn.bias", {3 * D}});
    t.push_back({p + "attn.c_proj.weight", {D, D}});
    t.push_back({p + "attn.c_proj.bias", {D}});
    t.push_back({p + "mlp.c_fc.weight", {D, M}});
    t.push_back({p + "mlp.c_fc.bias", {M}});
    t.push_back({p + "mlp.c_proj.weight", {M, D}});
    t.push_back({p + "mlp.c_proj.bias", {D}});
  }
  return t;
}

struct FamilyCase {
  const char* name;
  nlohmann::json config;
  TensorShapes tensors;
};
std::ostream& operator<<(std::ostream& os, const FamilyCase& c) { return os << c.name; }

std::vector<FamilyCase> familyCases() {
  const nlohmann::json sizes = {{"hidden_size", D}, {"num_hidden_layers", kLayers}, {"intermediate_size", M},
                                {"vocab_size", V}, {"max_position_embeddings", P}, {"rms_norm_eps", 1e-5}};
  nlohmann::json gpt2 = {{"model_type", "gpt2"}, {"n_embd", D}, {"n_layer", kLayers}, {"n_head", 4},
                         {"n_inner", M}, {"vocab_size", V}, {"n_positions", P}, {"layer_norm_epsilon", 1e-5}};
  nlohmann::json llama = sizes, mistral = sizes, gemma2 = sizes;
  llama.update({{"model_type", "llama"}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                {"tie_word_embeddings", true}, {"rope_theta", 500.0}});
  mistral.update({{"model_type", "mistral"}, {"num_attention_heads", 4}, {"num_key_value_heads", 4},
                  {"tie_word_embeddings", true}, {"sliding_window", 37}});
  gemma2.update({{"model_type", "gemma2"}, {"num_attention_heads", 2}, {"num_key_value_heads", 1},
                 {"head_dim", 8}, {"query_pre_attn_scalar", 6}, {"attn_logit_softcapping", 2.5},
                 {"sliding_window", 50}, {"hidden_activation", "gelu_pytorch_tanh"}});
  //        name        config   tensors
  return {{"gpt2",      gpt2,    gpt2Layout()},
          {"llama_gqa", llama,   llamaLayout(8, false)},
          {"mistral",   mistral, llamaLayout(16, false)},
          {"gemma2",    gemma2,  llamaLayout(8, true)}};
}

// FOLDER/config.json and model.safetensors (F32, seeded uniform values in [-0.5, 0.5]).
void writeFolder(const fs::path& folder, const FamilyCase& c) {
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << c.config.dump();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  writeF32Safetensors(folder / "model.safetensors", c.tensors, [&](int64_t) { return uniform(rng); });
}

ModelTokens idsOf(const Model& model, int64_t L, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < L; ++t) ids.push_back(static_cast<int64_t>(rng() % V));
  return tokensFromIds(model, ids);
}

bool sameBits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// |a - b| <= tol, or both the same infinity.
::testing::AssertionResult near(float a, float b, double tol) {
  if (a == b || std::fabs(static_cast<double>(a) - b) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b;
}

class TiledModel : public ::testing::TestWithParam<FamilyCase> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tiled-model-XXXXXX";
    root_ = mkdtemp(pattern);
    writeFolder(root_, GetParam());
    model_ = std::make_shared<const Model>(loadModel(root_.string(), false));
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  std::shared_ptr<const Model> model_;
};

constexpr int64_t kL = 150;  // three 64-row blocks, the last one partial
constexpr double kTol = 1e-6;

TEST_P(TiledModel, TilesAndZoomEqualTheFullMaps) {
  ModelRunner full(model_), tiled(model_);
  tiled.keepMapsWithin(1);
  const ModelTokens tokens = idsOf(*model_, kL, 3);
  const ModelRun& a = full.run(tokens);
  const ModelRun& b = tiled.run(tokens);
  ASSERT_TRUE(a.mapsKept());
  ASSERT_FALSE(b.mapsKept());
  EXPECT_TRUE(sameBits(a.logits.dense(), b.logits.dense())) << "the same row computations, so the same outputs";
  const ModelConfig& c = model_->config;
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    const AttentionTrace& ref = a.layers[layer];
    EXPECT_TRUE(b.layers[layer].scores.empty() && b.layers[layer].probs.empty() && b.layers[layer].mask.allowed.empty());
    const TiledAttention t = tiledFromTrace(b.layers[layer], layerOptions(c, layer));
    ASSERT_TRUE(t.normalisers);
    struct Window {
      int64_t i0, rows, j0, cols;
    };
    //                          whole map         diagonal      far off       masked corner  one cell
    const Window windows[] = {{0, kL, 0, kL}, {60, 40, 60, 40}, {130, 20, 0, 17}, {0, 30, 100, 50}, {149, 1, 149, 1}};
    for (int64_t h = 0; h < c.heads; ++h)
      for (const Window& w : windows) {
        const Tile tile = computeTile(t, 0, h, w.i0, w.rows, w.j0, w.cols);
        for (int64_t r = 0; r < w.rows; ++r)
          for (int64_t col = 0; col < w.cols; ++col) {
            const size_t cell = static_cast<size_t>(r * w.cols + col);
            const size_t full_cell = static_cast<size_t>((h * kL + w.i0 + r) * kL + w.j0 + col);
            ASSERT_EQ(tile.allowed.data[cell], ref.mask.allowed.data[(w.i0 + r) * kL + w.j0 + col]);
            ASSERT_TRUE(near(tile.probs.data[cell], ref.probs.data[full_cell], kTol))
                << "layer " << layer << " head " << h << " cell " << w.i0 + r << ", " << w.j0 + col;
            ASSERT_TRUE(near(tile.scores.data[cell], ref.scores.data[full_cell], kTol));
          }
      }
    // Zoom levels: pooled windows (the focus view's larger windows) against the pooled full map.
    struct Zoom {
      Window w;
      int64_t out_rows, out_cols;
    };
    const Zoom zooms[] = {{{0, kL, 0, kL}, 16, 16}, {{0, kL, 0, kL}, 75, 50}, {{40, 100, 10, 90}, 7, 9}};
    for (int64_t h = 0; h < c.heads; ++h)
      for (const Zoom& z : zooms) {
        const Window& w = z.w;
        const std::optional<Overview> pooled = computeWindow(t, 0, h, w.i0, w.rows, w.j0, w.cols, z.out_rows, z.out_cols);
        ASSERT_TRUE(pooled);
        const MaskedMap probs{&ref.probs.data[(h * kL + w.i0) * kL + w.j0], &ref.mask.allowed.data[w.i0 * kL + w.j0],
                              w.rows, w.cols, kL};
        MaskedMap scores = probs;
        scores.values = &ref.scores.data[(h * kL + w.i0) * kL + w.j0];
        const Tensor want_probs = maxPool2d(probs, z.out_rows, z.out_cols);
        const Tensor want_scores = maxAbsPool2d(scores, z.out_rows, z.out_cols);
        for (size_t n = 0; n < want_probs.data.size(); ++n) {
          // A masked block's probability: -inf in the texture, 0 in the overview.
          const float want = std::isinf(want_probs.data[n]) ? 0.0f : want_probs.data[n];
          ASSERT_TRUE(near(pooled->probs.data[n], want, kTol)) << "pooled cell " << n;
          ASSERT_TRUE(near(pooled->scores.data[n], want_scores.data[n], kTol)) << "pooled cell " << n;
        }
      }
  }
}

TEST_P(TiledModel, TiledViewHasEveryLayerAndTheFullViewsHeadTable) {
  ModelRunner full(model_), tiled(model_);
  tiled.keepMapsWithin(1);
  const ModelTokens tokens = idsOf(*model_, kL, 5);
  const ViewModel a = viewFromModelRun(*model_, full.run(tokens));
  const ViewModel b = viewFromModelRun(*model_, tiled.run(tokens));
  ASSERT_FALSE(a.tiled);
  ASSERT_TRUE(b.tiled);
  EXPECT_EQ(b.source, ViewSource::ModelRun);  // a model's run, its maps in tiles
  EXPECT_NE(acrossLayersUnavailable(b), "") << "rollout and flow need the full maps";
  EXPECT_EQ(b.mapQueryTokens(), a.query_tokens[0]);
  EXPECT_EQ(b.layers, model_->config.n_layers);
  EXPECT_EQ(b.tiled->layers.size(), static_cast<size_t>(b.layers));
  EXPECT_EQ(b.mapL(), kL);
  EXPECT_EQ(b.predictions.size(), a.predictions.size());
  for (int64_t layer = 0; layer < b.layers; ++layer) {
    EXPECT_EQ(b.maps[layer].mask_name, a.maps[layer].mask_name) << "layer " << layer;
    EXPECT_EQ(b.allowed_counts[layer], a.allowed_counts[layer]) << "the real map's cells";
  }
  const HeadTable ta = headTableOf(a), tb = headTableOf(b);
  ASSERT_EQ(ta.metrics.size(), tb.metrics.size());
  for (size_t n = 0; n < ta.metrics.size(); ++n) {
    EXPECT_EQ(ta.metrics[n].layer, tb.metrics[n].layer);
    EXPECT_EQ(ta.metrics[n].head, tb.metrics[n].head);
    for (const MetricInfo& info : headMetricInfos()) {
      const double x = ta.metrics[n].*info.field, y = tb.metrics[n].*info.field;
      if (std::isnan(x)) EXPECT_TRUE(std::isnan(y)) << info.name;
      else EXPECT_NEAR(x, y, 1e-6 * std::max(1.0, std::fabs(x))) << info.name << " of row " << n;  // relative above 1
    }
  }
  ASSERT_EQ(ta.clusters.size(), tb.clusters.size());
  EXPECT_EQ(ta.clusters[0].group, tb.clusters[0].group);
  ASSERT_EQ(ta.clusters[0].correlation.size(), tb.clusters[0].correlation.size());
  for (size_t n = 0; n < ta.clusters[0].correlation.size(); ++n)
    EXPECT_NEAR(ta.clusters[0].correlation[n], tb.clusters[0].correlation[n], 1e-6);
}

// Appending keeps the kept rows (normalisers included) and equals a fresh run bit for bit;
// a run that crosses the budget's edge recomputes every row (nothing of the other kind kept).
TEST_P(TiledModel, AppendedTextEqualsAFreshRunAcrossTheBudget) {
  const ModelTokens longer = idsOf(*model_, kL, 9);
  ModelTokens shorter = longer;
  shorter.ids.resize(100), shorter.text.resize(100), shorter.label.resize(100), shorter.unknown.resize(100);
  const ModelConfig& c = model_->config;
  ModelRunner growing(model_), fresh(model_);
  growing.keepMapsWithin(modelMapBytes(c.n_layers, c.heads, 100));  // 100 tokens fit, 150 do not
  fresh.keepMapsWithin(1);
  ASSERT_TRUE(growing.run(shorter).mapsKept());
  const ModelRun& crossed = growing.run(longer);
  EXPECT_FALSE(crossed.mapsKept());
  EXPECT_EQ(crossed.first_computed, 0);
  ModelTokens more = longer;
  more.ids.push_back(1), more.text.push_back("x"), more.label.push_back("x"), more.unknown.push_back(0);
  const ModelRun& appended = growing.run(more);
  EXPECT_EQ(appended.first_computed, 150) << "the new token's row only";
  const ModelRun& want = fresh.run(more);
  EXPECT_TRUE(sameBits(appended.logits.dense(), want.logits.dense()));
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    const AttentionTrace& x = appended.layers[layer];
    const AttentionTrace& y = want.layers[layer];
    EXPECT_TRUE(sameBits(x.q, y.q) && sameBits(x.k, y.k)) << "layer " << layer;
    ASSERT_EQ(x.normalisers.size(), y.normalisers.size());
    for (size_t n = 0; n < x.normalisers.size(); ++n) {
      ASSERT_EQ(x.normalisers[n].max, y.normalisers[n].max) << "row " << n;
      ASSERT_EQ(x.normalisers[n].sum, y.normalisers[n].sum) << "row " << n;
    }
  }
}

// The view pools every layer's overview with progress (0 to 1 over all layers); returning
// false cancels (Cancelled), as a synthetic tiled overview does.
TEST_P(TiledModel, OverviewProgressCoversEveryLayerAndCancels) {
  ModelRunner tiled(model_);
  tiled.keepMapsWithin(1);
  const ModelRun& run = tiled.run(idsOf(*model_, kL, 11));
  std::vector<double> seen;
  viewFromModelRun(*model_, run, [&](double f) {
    seen.push_back(f);
    return true;
  });
  ASSERT_FALSE(seen.empty());
  // Row blocks finish on several threads: reports may swap places, never leave [0, 1].
  EXPECT_DOUBLE_EQ(*std::max_element(seen.begin(), seen.end()), 1.0);
  EXPECT_LE(*std::min_element(seen.begin(), seen.end()), 1.0 / static_cast<double>(model_->config.n_layers));
  EXPECT_GE(*std::min_element(seen.begin(), seen.end()), 0.0);
  EXPECT_THROW(viewFromModelRun(*model_, run, [](double f) { return f < 0.5; }), Cancelled);
}

INSTANTIATE_TEST_SUITE_P(Families, TiledModel, ::testing::ValuesIn(familyCases()),
                         [](const ::testing::TestParamInfo<FamilyCase>& info) { return std::string(info.param.name); });

TEST(TiledModelRefusals, TiledFromTraceNeedsNormalisers) {
  AttentionTrace trace;
  EXPECT_THROW(tiledFromTrace(trace, AttentionOptions()), InputError);
}

}  // namespace
}  // namespace attnscope
