// Hugging Face config.json (model/hf_config.h): the two spellings give the same run
// settings, the traits come from the family's registry row, and unsupported options are one
// line naming config.json, the field and the supported values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/model.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

constexpr const char* kSizes = R"("hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
  "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64)";

ModelConfig parse(const std::string& type, const std::string& fields) {
  return parseHfConfig("{\"model_type\": \"" + type + "\", " + kSizes + (fields.empty() ? "" : ", " + fields) + "}",
                       "m/config.json");
}

std::string errorOf(const std::string& type, const std::string& fields) {
  try {
    parse(type, fields);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ModelConfig, BothSpellingsGiveTheSameRun) {
  struct Case {
    const char* name;
    const char* type;
    const char* v4;
    const char* v5;
  };
  const Case cases[] = {
      {"llama3 scaling", "llama",
       R"("rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32})",
       R"("rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32})"},
      {"linear, old type key", "llama", R"("rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0})",
       R"("rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0})"},
      {"neox partial", "gpt_neox", R"("rotary_pct": 0.25, "rotary_emb_base": 1000, "layer_norm_eps": 1e-5)",
       R"("rope_parameters": {"rope_type": "default", "rope_theta": 1000, "partial_rotary_factor": 0.25}, "layer_norm_eps": 1e-5)"},
      {"gemma2 windows", "gemma2", R"("rope_theta": 10000.0, "sliding_window": 8, "head_dim": 16)",
       R"("rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "sliding_window": 8, "head_dim": 16,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ModelConfig a = parse(c.type, c.v4), b = parse(c.type, c.v5);
    EXPECT_EQ(a.rope_inv_freq, b.rope_inv_freq);
    EXPECT_EQ(a.window, b.window);
    EXPECT_EQ(a.rope_type, b.rope_type);
    EXPECT_FALSE(a.rope_inv_freq.empty());
  }
  // Partial rotary: 16-dim heads, 25 % -> 4 rotated features, 2 frequencies 1000^(-0/4), 1000^(-2/4).
  const ModelConfig neox = parse("gpt_neox", R"("rotary_pct": 0.25, "rotary_emb_base": 1000)");
  ASSERT_EQ(neox.rope_inv_freq.size(), 2u);
  EXPECT_DOUBLE_EQ(neox.rope_inv_freq[1], 1.0 / std::sqrt(1000.0));
  // Gemma 2 without layer_types: layers 0, 2 slide; window 8 = itself and 7 keys before.
  EXPECT_EQ(parse("gemma2", R"("sliding_window": 8, "head_dim": 16)").window, (std::vector<int64_t>{7, -1, 7, -1}));
  EXPECT_EQ(parse("mistral", R"("sliding_window": 3)").window, (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(parse("qwen2", R"("sliding_window": 3, "use_sliding_window": true, "max_window_layers": 3)").window,
            (std::vector<int64_t>{-1, -1, -1, 2}));
  EXPECT_EQ(parse("qwen2", R"("sliding_window": 3)").window, (std::vector<int64_t>{-1, -1, -1, -1}));
  // Qwen3: the window only with use_sliding_window (Qwen3Config sets sliding_window to None
  // otherwise), whatever layer_types says.
  constexpr const char* kAllSliding =
      R"("sliding_window": 3, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"])";
  EXPECT_EQ(parse("qwen3", kAllSliding).window, (std::vector<int64_t>{-1, -1, -1, -1}));
  EXPECT_EQ(parse("qwen3", std::string(kAllSliding) + R"(, "use_sliding_window": true)").window,
            (std::vector<int64_t>{2, 2, 2, -1}));
  EXPECT_EQ(parse("qwen3", R"("sliding_window": 3, "use_sliding_window": true, "max_window_layers": 2)").window,
            (std::vector<int64_t>{-1, -1, 2, 2}));
}

TEST(ModelConfig, TraitsComeFromTheRegistry) {
  const ModelConfig gemma = parse("gemma2", R"("head_dim": 16, "query_pre_attn_scalar": 256, "attn_logit_softcapping": 50.0,
                                           "final_logit_softcapping": 30.0)");
  EXPECT_EQ(gemma.family->norm, Norm::RmsNormPlusOne);
  EXPECT_TRUE(gemma.tied);
  EXPECT_DOUBLE_EQ(gemma.attn_scale, 1.0 / 16.0);
  EXPECT_EQ(gemma.attn_softcap.value_or(0), 50.0);
  EXPECT_EQ(gemma.final_softcap.value_or(0), 30.0);
  EXPECT_EQ(gemma.activation, Activation::GeluTanh);
  const ModelConfig qwen = parse("qwen2", "");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.o_bias);
  const ModelConfig llama = parse("llama", R"("attention_bias": true)");
  EXPECT_TRUE(llama.qkv_bias && llama.o_bias);
  EXPECT_EQ(llama.kv_heads, 2);
  // Heads narrower or wider than the model (Gemma 2 2B: 8 x 256 into 2304) are allowed.
  EXPECT_EQ(parse("llama", R"("head_dim": 32)").head_dim, 32);
  const ModelConfig gpt2 = parseHfConfig(
      R"({"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 16, "vocab_size": 50})", "c");
  EXPECT_EQ(gpt2.mlp_dim, 128);  // n_inner absent: 4 x n_embd
  EXPECT_TRUE(gpt2.family->conv1d && gpt2.tied);
  // Qwen3: its own head_dim, no q/k/v bias, and per-head q/k norms among its tensors.
  const ModelConfig qwen3 = parse("qwen3", R"("head_dim": 32)");
  EXPECT_EQ(qwen3.head_dim, 32);
  EXPECT_FALSE(qwen3.qkv_bias || qwen3.o_bias);
  EXPECT_EQ(qwen3.family->names.of(Role::QNorm, 3), "layers.3.self_attn.q_norm");
  EXPECT_FALSE(qwen.family->names.has(Role::QNorm));
  // SmolLM3: no RoPE where no_rope_layers says 0 (by default every 4th layer); llama rotates every layer.
  EXPECT_EQ(parse("smollm3", "").rotary, (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(parse("smollm3", R"("no_rope_layer_interval": 2)").rotary, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(parse("smollm3", R"("no_rope_layers": [0, 1, 1, 0])").rotary, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(llama.rotary, (std::vector<uint8_t>{1, 1, 1, 1}));
  EXPECT_EQ(errorOf("smollm3", R"("no_rope_layers": [1, 2, 1, 1])"),
            "m/config.json: \"no_rope_layers\" entry 1 must be 0 (no RoPE) or 1 (RoPE)");
  // Its window only with use_sliding_window, on the NoPE layers unless layer_types says otherwise.
  EXPECT_EQ(parse("smollm3", R"("sliding_window": 3, "use_sliding_window": true)").window,
            (std::vector<int64_t>{-1, -1, -1, 2}));
  EXPECT_EQ(parse("smollm3", R"("sliding_window": 3)").window, (std::vector<int64_t>{-1, -1, -1, -1}));
}

// transformers 5's rope_parameters keyed by layer type: each layer's own base and scaling,
// read by layerOptions (issue 34's RoPE base per layer); one RoPE elsewhere (layer_rope empty).
TEST(ModelConfig, RopePerLayerType) {
  const ModelConfig c = parse("llama", R"("head_dim": 8,
      "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}},
      "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"])");
  ASSERT_EQ(c.layer_rope.size(), 4u);
  const double want_theta[] = {100.0, 100.0, 1e6, 100.0};
  for (int64_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const AttentionOptions o = layerOptions(c, i);
    EXPECT_EQ(o.rope_base, want_theta[i]);
    ASSERT_EQ(o.rope_inv_freq.size(), 4u);
    const bool full = i == 2;
    for (int k = 0; k < 4; ++k)  // theta^(-2k/8), divided by the linear factor on the full layer
      EXPECT_DOUBLE_EQ(o.rope_inv_freq[k], std::pow(want_theta[i], -2.0 * k / 8.0) / (full ? 2.0 : 1.0));
  }
  EXPECT_EQ(c.rope_theta, 1e6);  // the model's RoPE is the full-attention layers'
  EXPECT_EQ(c.rope_type, "linear");
  // The sliding layers' base falls back to rope_local_base_freq.
  const ModelConfig local = parse("llama", R"("rope_local_base_freq": 50.0,
      "rope_parameters": {"full_attention": {"rope_theta": 1000.0}, "sliding_attention": {}},
      "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"])");
  EXPECT_EQ(layerOptions(local, 1).rope_base, 50.0);
  EXPECT_EQ(layerOptions(local, 2).rope_base, 1000.0);
  const ModelConfig llama = parse("llama", R"("rope_theta": 500.0)");
  EXPECT_TRUE(llama.layer_rope.empty());
  EXPECT_EQ(layerOptions(llama, 3).rope_base, 500.0);
  EXPECT_EQ(layerOptions(llama, 3).rope_inv_freq, llama.rope_inv_freq);
  EXPECT_EQ(errorOf("llama", R"("rope_parameters": {"sliding_attention": {"rope_type": "yarn"}})"),
            "m/config.json: \"rope_parameters.sliding_attention.rope_type\" is \"yarn\" but attnscope supports "
            "\"default\", \"linear\", \"llama3\", \"longrope\"");
  EXPECT_EQ(errorOf("llama", R"("rope_parameters": {"full_attention": 3})"),
            "m/config.json: \"rope_parameters.full_attention\" must be an object");
}

// Gemma 3: local layers every layer but each sliding_window_pattern-th (default 6), each layer
// type with its own RoPE in both spellings, and Gemma3TextConfig's defaults.
TEST(ModelConfig, Gemma3LocalAndGlobalLayers) {
  const ModelConfig v4 = parse("gemma3_text", R"("head_dim": 16, "sliding_window": 8, "sliding_window_pattern": 2,
      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0})");
  const ModelConfig v5 = parse("gemma3_text", R"("head_dim": 16, "sliding_window": 8,
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
      "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})");
  for (const ModelConfig* c : {&v4, &v5}) {
    EXPECT_EQ(c->window, (std::vector<int64_t>{7, -1, 7, -1}));
    for (int64_t i = 0; i < 4; ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(layerOptions(*c, i).rope_base, i % 2 ? 1e6 : 1e4);
      EXPECT_EQ(layerOptions(*c, i).rope_inv_freq, layerOptions(v4, i).rope_inv_freq);
      EXPECT_DOUBLE_EQ(layerOptions(*c, i).rope_inv_freq[1], std::pow(i % 2 ? 1e6 : 1e4, -2.0 / 16.0) / (i % 2 ? 8.0 : 1.0));
    }
    EXPECT_EQ(c->family->names.of(Role::QNorm, 1), "layers.1.self_attn.q_norm");
  }
  // Defaults: pattern 6 (layer 5 global), sliding_window 4096, global base 1e6, local 10000,
  // query_pre_attn_scalar 256.
  ModelConfig d = parseHfConfig(
      R"({"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 7, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100, "head_dim": 16})", "m/config.json");
  EXPECT_EQ(d.window, (std::vector<int64_t>{4095, 4095, 4095, 4095, 4095, -1, 4095}));
  EXPECT_EQ(layerOptions(d, 5).rope_base, 1e6);
  EXPECT_EQ(layerOptions(d, 6).rope_base, 1e4);
  EXPECT_DOUBLE_EQ(d.attn_scale, 1.0 / 16.0);
  EXPECT_TRUE(d.tied);
  // OLMo 2: norms over the whole q / k projections, no pre-norms, rms_norm_eps 1e-5 by default.
  const ModelConfig olmo2 = parse("olmo2", "");
  EXPECT_TRUE(olmo2.family->names.has(Role::QProjNorm) && olmo2.family->names.has(Role::PostMlpNorm));
  EXPECT_FALSE(olmo2.family->names.has(Role::AttnNorm) || olmo2.family->names.has(Role::MlpNorm));
  EXPECT_EQ(olmo2.norm_eps, 1e-5);
  EXPECT_FALSE(olmo2.tied);
  EXPECT_EQ(errorOf("gemma3_text", R"("use_bidirectional_attention": true)"),
            "m/config.json: \"use_bidirectional_attention\" is true but attnscope supports false (a causal decoder)");
}

// Phi-3's longrope: inverse frequencies over the short factors up to
// original_max_position_embeddings (top level in 4.x, in the RoPE object in 5.x), over the long
// ones past it (a text of 17 tokens: every position), cos and sin times
// sqrt(1 + ln(s) / ln(original)) with s = max_position_embeddings / original in both; the
// context is max_position_embeddings.
TEST(ModelConfig, Phi3LongRope) {
  const ModelConfig v4 = parse("phi3", R"("head_dim": 16, "partial_rotary_factor": 0.5, "rope_theta": 100.0,
      "original_max_position_embeddings": 16,
      "rope_scaling": {"type": "longrope", "short_factor": [1, 2, 4, 8], "long_factor": [9, 9, 9, 9]})");
  const ModelConfig v5 = parse("phi3", R"("head_dim": 16, "rope_parameters": {"rope_type": "longrope", "rope_theta": 100.0,
      "partial_rotary_factor": 0.5, "original_max_position_embeddings": 16,
      "short_factor": [1, 2, 4, 8], "long_factor": [9, 9, 9, 9]})");
  for (const ModelConfig* c : {&v4, &v5}) {
    ASSERT_EQ(c->rope_inv_freq.size(), 4u);
    for (const int64_t L : {0, 1, 16, 17, 64}) {
      SCOPED_TRACE(L);
      const AttentionOptions o = layerOptions(*c, 1, L);
      ASSERT_EQ(o.rope_inv_freq.size(), 4u);
      for (int i = 0; i < 4; ++i)
        EXPECT_DOUBLE_EQ(o.rope_inv_freq[i], std::pow(100.0, -2.0 * i / 8.0) / (L > 16 ? 9.0 : std::pow(2.0, i)));
      EXPECT_DOUBLE_EQ(o.rope_attention_factor, std::sqrt(1.0 + std::log(64.0 / 16.0) / std::log(16.0)));
      EXPECT_EQ(longRopeAt(*c, L), L > 16);
    }
    EXPECT_EQ(c->max_positions, 64);
    EXPECT_EQ(c->norm_eps, 1e-5);
    EXPECT_EQ(c->family->names.of(Role::Qkv, 2), "layers.2.self_attn.qkv_proj");
    EXPECT_EQ(c->family->names.of(Role::GateUp, 0), "layers.0.mlp.gate_up_proj");
    EXPECT_FALSE(c->family->names.has(Role::Q) || c->family->names.has(Role::Gate));
  }
  EXPECT_EQ(layerOptions(parse("phi3", ""), 0).rope_attention_factor, 1.0);  // no longrope: cos and sin as they are
  EXPECT_EQ(errorOf("phi3", R"("rope_scaling": {"type": "longrope", "short_factor": [1, 2]})"),
            "m/config.json: \"rope_scaling.short_factor\" must list 8 numbers (one per pair of rotated features)");
  EXPECT_EQ(errorOf("phi3", R"("rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, 1],
      "long_factor": [1, 1, 1, 1, 1, 1, 1, -1]})"),
            "m/config.json: \"rope_scaling.long_factor\" entry 7 must be a positive number");
}

TEST(ModelConfig, UnsupportedOptionsAreOneLineWithTheSupportedValues) {
  const std::pair<std::string, std::string> cases[] = {
      {errorOf("t5", ""), "m/config.json: \"model_type\" is \"t5\" but attnscope supports \"gpt2\", \"llama\", "
                          "\"mistral\", \"qwen2\", \"gemma2\", \"gpt_neox\", \"bert\", \"qwen3\", \"smollm3\", "
                          "\"gemma3_text\", \"olmo2\", \"phi3\""},
      {errorOf("llama", R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
       "m/config.json: \"rope_scaling.rope_type\" is \"yarn\" but attnscope supports \"default\", \"linear\", \"llama3\", "
       "\"longrope\""},
      {errorOf("llama", R"("rope_parameters": {"rope_type": "dynamic"})"),
       "m/config.json: \"rope_parameters.rope_type\" is \"dynamic\" but attnscope supports \"default\", \"linear\", \"llama3\", "
       "\"longrope\""},
      {errorOf("llama", R"("rope_scaling": {"rope_type": "linear"})"),
       "m/config.json: \"rope_scaling.factor\" is missing (rope_type \"linear\" needs it)"},
      {errorOf("llama", R"("hidden_act": "relu")"),
       "m/config.json: \"hidden_act\" is \"relu\" but attnscope supports \"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\", "
       "\"gelu_fast\", \"silu\", \"swish\""},
      {errorOf("gpt_neox", R"("head_dim": 32, "rotary_pct": 0.5)"),
       "m/config.json: \"head_dim\" x num_attention_heads must be hidden_size 64 for gpt_neox's fused q/k/v weight"},
      {errorOf("llama", R"("num_attention_heads": 3, "num_key_value_heads": 1)"),
       "m/config.json: \"num_attention_heads\" 3 does not divide hidden_size 64 (give head_dim)"},
      {errorOf("gemma2", R"("head_dim": 16, "layer_types": ["sliding_attention"])"),
       "m/config.json: \"layer_types\" must list one type per layer (4)"},
      {errorOf("llama", R"("num_key_value_heads": 3)"),
       "m/config.json: \"num_key_value_heads\" 3 does not divide num_attention_heads 4"},
      {errorOf("llama", R"("rope_theta": 1e400)"), "m/config.json: not valid JSON"},
  };
  for (const auto& [got, want] : cases) EXPECT_EQ(got, want);
}

// Generation stops at config.json's eos_token_id: one id or a list (Llama 3's three), entries
// that are not integers left out, none without the key.
TEST(ModelConfig, EosIds) {
  EXPECT_EQ(parse("llama", R"("eos_token_id": 2)").eos_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(parse("llama", R"("eos_token_id": [128001, 128008, 128009])").eos_ids,
            (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(parse("llama", R"("eos_token_id": [7, "x", null])").eos_ids, (std::vector<int64_t>{7}));
  EXPECT_TRUE(parse("llama", "").eos_ids.empty());
}

}  // namespace
}  // namespace attnscope
