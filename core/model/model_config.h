// A model's configuration, whatever its folder kind (model.h); for Hugging Face model
// folders, config.json read in both spellings (transformers 4.x:
// rope_theta, rope_scaling, rotary_pct; 5.x: rope_parameters {rope_theta, rope_type,
// partial_rotary_factor}, layer_types), the family's own keys through its hooks (family.h).
// docs/models.md, "Hugging Face model folders".
//
// Sizes: V vocabulary, D hidden size, H query heads, G key/value heads, d head size,
// M MLP size, N layers, P learned positions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/family.h"
#include "tensor/tensor.h"

namespace attnscope {

enum class Activation { GeluErf, GeluTanh, Silu };

class ConfigFields;

// One RoPE: its base, its scaling type and the inverse frequencies of the rotated features
// ([r/2], scaled and partial).
struct RopeParams {
  double theta = 10000.0;
  std::string type = "default";
  std::vector<double> inv_freq;
  double attention_factor = 1.0;  // cos and sin times this (longrope)
  int64_t original_context = 0;   // longrope: where its short factors end (original_max_position_embeddings)
  std::vector<double> long_inv_freq;  // longrope: inv_freq over the long factors ([r/2]; empty: none)

  // longrope on a text of L tokens past the original context: every position rotates by the
  // long factors (transformers' forward of the whole text), else by inv_freq.
  bool longAt(int64_t L) const { return !long_inv_freq.empty() && L > original_context; }
  const std::vector<double>& invFreqAt(int64_t L) const { return longAt(L) ? long_inv_freq : inv_freq; }
};

struct ModelConfig {
  const Family* family = nullptr;
  std::string model_type;
  int64_t n_layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp_dim = 0;
  int64_t vocab = 0, max_positions = 0, type_vocab = 0;
  std::string context_key = "max_position_embeddings";  // the config.json key max_positions came from
  double norm_eps = 1e-5;
  Activation activation = Activation::GeluTanh;
  bool tied = false;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;  // the family's, or attention_bias / mlp_bias
  bool parallel_residual = false;  // gpt_neox use_parallel_residual (else PreNorm)
  // RoPE: the inverse frequencies of the rotated features ([r/2], scaled and partial).
  double rope_theta = 10000.0;
  std::string rope_type = "default";
  std::vector<double> rope_inv_freq;
  double rope_attention_factor = 1.0;  // longrope's attention_factor on cos and sin
  int64_t rope_original_context = 0;   // longrope: original_max_position_embeddings
  std::vector<double> rope_long_inv_freq;  // longrope: over the long factors (RopeParams::long_inv_freq)
  // [N], or empty: every rotating layer takes rope_theta / rope_inv_freq above. Filled where
  // RoPE differs per layer type (transformers 5's rope_parameters keyed by layer type,
  // {"full_attention": {...}, "sliding_attention": {...}}; Gemma 3's rope_local_base_freq):
  // each layer's own base and scaling. ropeOf(config, i) reads it.
  std::vector<RopeParams> layer_rope;
  std::vector<uint8_t> rotary;      // [N]: 1 = the layer rotates q and k (every layer of a RoPE family
                                    // unless its hooks say otherwise: SmolLM3's NoPE layers are 0)
  std::optional<double> attn_softcap, final_softcap;
  double attn_scale = 0.0;          // scores * attn_scale (1/sqrt(d), or query_pre_attn_scalar^-0.5)
  std::vector<int64_t> window;      // [N]: causal window W (a query sees itself and W keys before), -1 = full
  std::string config_path;
  std::vector<int64_t> eos_ids;     // config.json's eos_token_id (one or a list), GGUF's tokenizer.ggml.eos_token_id
};

// Layer i's RoPE (layer_rope, else the model's).
inline RopeParams ropeOf(const ModelConfig& c, int64_t i) {
  return c.layer_rope.empty() ? RopeParams{c.rope_theta, c.rope_type, c.rope_inv_freq, c.rope_attention_factor,
                                           c.rope_original_context, c.rope_long_inv_freq}
                              : c.layer_rope[i];
}
// The model's RoPE as one (layer_rope stays as it is).
inline void setModelRope(ModelConfig& c, const RopeParams& r) {
  c.rope_theta = r.theta, c.rope_type = r.type, c.rope_inv_freq = r.inv_freq;
  c.rope_attention_factor = r.attention_factor;
  c.rope_original_context = r.original_context, c.rope_long_inv_freq = r.long_inv_freq;
}
// True when a text of L tokens takes any layer's longrope long factors (RopeParams::longAt):
// rows computed on a text on the other side of the original context rotate otherwise.
bool longRopeAt(const ModelConfig& c, int64_t L);

// For families' hooks (family.h): one RoPE from a rope_parameters / rope_scaling object
// `params` (`where` names it in errors), its base falling back to `theta`; the partial
// rotary factor from config.json's top level unless `params` gives its own.
RopeParams readRopeParams(const ConfigFields& f, const nlohmann::json& params, const std::string& where, double theta,
                          const ModelConfig& c);
// Which layers are "sliding_attention": config.json's layer_types, else the family's
// sliding_layers rule (none without one).
std::vector<bool> slidingLayers(const ConfigFields& f, const ModelConfig& c);

// Reads FOLDER/config.json. Every problem is one InputError naming config.json and the field,
// with the supported values where there is a list ("rope_scaling.rope_type is \"yarn\" but
// attnscope supports \"default\", \"linear\", \"llama3\"").
ModelConfig readHfConfig(const std::string& folder);
// The same from config.json's text; `path` names the file in errors.
ModelConfig parseHfConfig(const std::string& json_text, const std::string& path);

// transformers' activation names ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "silu",
// "swish"); nullopt for any other.
std::optional<Activation> activationNamed(const std::string& name);
// RoPE's unscaled inverse frequencies theta^(-2i / rotary_dims), i < rotary_dims / 2.
std::vector<double> ropeDefaultInvFreq(double theta, int64_t rotary_dims);

// True when FOLDER/config.json has a "model_type" (a Hugging Face folder, not attnscope-model/1).
bool isHfModelFolder(const std::string& folder);

}  // namespace attnscope
