// What the pipeline panel and the greyed controls show of a model layer (issue 38): each
// family's LayerFacts (model/folder_runner.h layerFacts) from config.json as transformers
// writes it: Qwen3's own head_dim and per-head q/k norm, SmolLM3's NoPE layers, Gemma 3's
// window and RoPE base per layer type, OLMo 2's whole-projection norm, Phi-3's partial rotary
// and longrope; and a model layer's trace lists its q/k norm as a stage with its shape, where
// transformers applies it (after the projection for OLMo 2, after the view per head).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "attention/cached_rows.h"
#include "model/folder_runner.h"
#include "model/model_config.h"
#include "reference.h"

namespace attnscope {
namespace {

ModelConfig parse(const std::string& type, const std::string& fields) {
  return parseHfConfig(R"({"model_type": ")" + type + R"(", "hidden_size": 64, "num_hidden_layers": 4,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
      "max_position_embeddings": 64, )" + fields + "}",
                       "m/config.json");
}

TEST(LayerFacts, Qwen3HeadDimPerHeadNormAndWindowWhereLayerTypesSay) {
  const ModelConfig c = parse("qwen3", R"("head_dim": 32, "rope_theta": 1000000.0, "sliding_window": 8,
      "use_sliding_window": true, "layer_types": ["full_attention", "sliding_attention", "full_attention",
      "sliding_attention"])");
  for (int64_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const LayerFacts f = layerFacts(c, i);
    EXPECT_EQ((std::vector<int64_t>{f.heads, f.kv_heads, f.head_dim, f.width}), (std::vector<int64_t>{4, 2, 32, 64}));
    EXPECT_EQ(f.qk_norm, QkNorm::PerHead);
    EXPECT_EQ(f.positions, LayerPositions::Rope);
    EXPECT_EQ((std::pair{f.rope_base, f.rotary_dims}), (std::pair{1e6, int64_t{32}}));
    EXPECT_EQ(f.window, i % 2 ? 7 : -1);  // a query sees itself and 7 keys before: sliding_window 8
    EXPECT_EQ(f.sliding_window, i % 2 ? 8 : 0);
    EXPECT_TRUE(f.own_head_dim);  // 4 x 32 is not the hidden 64
  }
  // Without use_sliding_window no layer slides, whatever layer_types say.
  const ModelConfig global = parse("qwen3", R"("head_dim": 32, "sliding_window": 8,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention"])");
  EXPECT_EQ(layerFacts(global, 1).window, -1);
}

TEST(LayerFacts, SmolLM3NoPeLayersHaveNoPositions) {
  const ModelConfig c = parse("smollm3", R"("rope_theta": 5000.0, "no_rope_layers": [1, 1, 0, 1])");
  for (int64_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const LayerFacts f = layerFacts(c, i);
    EXPECT_EQ(f.positions, i == 2 ? LayerPositions::NoPe : LayerPositions::Rope);
    EXPECT_EQ(f.rope_base, i == 2 ? 0.0 : 5000.0);
    EXPECT_EQ(f.rotary_dims, i == 2 ? 0 : 16);
    EXPECT_EQ(f.qk_norm, QkNorm::None);
  }
  EXPECT_STREQ(layerPositionsName(layerFacts(c, 2).positions), "nope");
}

TEST(LayerFacts, Gemma3WindowAndRopeBasePerLayerType) {
  const ModelConfig c = parse("gemma3_text", R"("head_dim": 16, "sliding_window": 8, "sliding_window_pattern": 2,
      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "attn_logit_softcapping": 20.0,
      "query_pre_attn_scalar": 64)");
  for (int64_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const LayerFacts f = layerFacts(c, i);
    const bool global = i % 2 == 1;
    EXPECT_EQ(f.window, global ? -1 : 7);
    EXPECT_EQ(f.rope_base, global ? 1e6 : 1e4);
    EXPECT_EQ(f.qk_norm, QkNorm::PerHead);
    EXPECT_EQ(f.softcap, std::optional<double>(20.0));
    EXPECT_DOUBLE_EQ(f.scale, 1.0 / 8.0);  // query_pre_attn_scalar^-1/2
  }
}

TEST(LayerFacts, Olmo2WholeProjectionNormPhi3PartialRotaryGpt2Added) {
  EXPECT_EQ(layerFacts(parse("olmo2", R"("rope_theta": 500000.0)"), 0).qk_norm, QkNorm::WholeProjection);
  EXPECT_STREQ(qkNormName(QkNorm::WholeProjection), "whole_projection");
  const ModelConfig phi3 = parse("phi3", R"("partial_rotary_factor": 0.75, "rope_theta": 100.0,
      "original_max_position_embeddings": 16, "rope_scaling": {"type": "longrope",
      "short_factor": [1, 1, 1, 1, 1, 1], "long_factor": [2, 2, 2, 2, 2, 2]})");
  const LayerFacts f = layerFacts(phi3, 3);
  EXPECT_EQ((std::pair{f.rotary_dims, f.head_dim}), (std::pair{int64_t{12}, int64_t{16}}));
  EXPECT_EQ(f.rope_type, "longrope");
  EXPECT_DOUBLE_EQ(f.rope_attention_factor, std::sqrt(1.0 + std::log(4.0) / std::log(16.0)));
  const ModelConfig gpt2 = parseHfConfig(R"({"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4,
      "n_positions": 16, "vocab_size": 50})", "m/config.json");
  EXPECT_EQ(layerFacts(gpt2, 1).positions, LayerPositions::Added);
  EXPECT_EQ(layerFacts(gpt2, 1).rotary_dims, 0);
  EXPECT_FALSE(layerFacts(gpt2, 1).own_head_dim);
}

// A model layer's trace: the q/k norm stages in place, with their shapes; RoPE's comment says
// which features rotate.
TEST(LayerFacts, QkNormIsAStageOfTheLayersTrace) {
  std::mt19937 rng(7);
  const int64_t L = 5, D = 32, H = 4, G = 2, d = 8;
  AttentionInputs in = testing::randomInputs({1, L, L, D, D, D, D}, rng, true, 0.2, 1.5);
  testing::keepKeyValueRows(in, G * d);
  const std::vector<float> ones(H * d, 1.0f);
  for (const bool whole : {false, true}) {
    SCOPED_TRACE(whole ? "whole projection" : "per head");
    AttentionOptions o;
    o.heads = H, o.kv_heads = G, o.mask.causal = true, o.keep_raw_scores = false;
    o.q_norm = o.k_norm = ones.data();
    o.qk_norm_whole = whole;
    o.rope = true;
    o.rope_inv_freq = {1.0, 0.1};  // 4 of 8 features rotate
    AttentionTrace t;
    std::vector<float> out(L * D);
    attendRows(t, projectionsOf(in), o, in.query.data.data(), 0, L, std::vector<std::string>(L, "x"), out.data());
    std::vector<std::string> names;
    for (const Stage& s : t.stages) names.push_back(s.name);
    const auto at = [&](const char* name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
    ASSERT_LT(at("q_norm"), static_cast<std::ptrdiff_t>(names.size()));
    ASSERT_LT(at("k_norm"), static_cast<std::ptrdiff_t>(names.size()));
    EXPECT_EQ(at("q_norm"), at(whole ? "q_proj" : "q_view") + 1);
    EXPECT_EQ(at("k_norm"), at(whole ? "k_proj" : "k_view") + 1);
    EXPECT_EQ(t.stages[at("q_norm")].shape, whole ? (Shape{1, L, H * d}) : (Shape{1, L, H, d}));
    EXPECT_EQ(t.stages[at("k_norm")].shape, whole ? (Shape{1, L, G * d}) : (Shape{1, L, G, d}));
    EXPECT_EQ(t.stages[at("q_norm")].op, whole ? "rmsnorm (whole projection)" : "rmsnorm (per head)");
    EXPECT_NE(t.stages[at("q_rope")].code.find("features 0..3 of 8 rotate"), std::string::npos)
        << t.stages[at("q_rope")].code;
  }
  // Without the norms (every other model, the sandbox) there is no such stage.
  AttentionOptions sandbox;
  sandbox.heads = H, sandbox.kv_heads = G;
  const AttentionTrace plain = runAttention(in, sandbox);
  EXPECT_TRUE(std::none_of(plain.stages.begin(), plain.stages.end(), [](const Stage& s) { return s.name == "q_norm"; }));
}

}  // namespace
}  // namespace attnscope
