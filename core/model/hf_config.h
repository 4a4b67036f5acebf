// Hugging Face model folders: config.json read in both spellings (transformers 4.x:
// rope_theta, rope_scaling, rotary_pct; 5.x: rope_parameters {rope_theta, rope_type,
// partial_rotary_factor}, layer_types), and the registry of architecture traits, one row
// per model_type (hf_families.cpp). README, "Hugging Face model folders".
//
// Sizes: V vocabulary, D hidden size, H query heads, G key/value heads, d head size,
// M MLP size, N layers, P learned positions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

enum class HfNorm { LayerNorm, RmsNorm, RmsNormPlusOne };  // RmsNormPlusOne: x_hat * (1 + w) (Gemma)
enum class HfPositions { Learned, Rope };                    // learned: added to the embedding
enum class HfMlp { Plain, Gated };                           // act(up x) vs act(gate x) * (up x), then down
enum class HfResidual {
  PreNorm,    // x += attn(n1(x)); x += mlp(n2(x))
  Parallel,   // x += attn(n1(x)) + mlp(n2(x))               (GPT-NeoX use_parallel_residual)
  Sandwich,   // x += n1'(attn(n1(x))); x += n2'(mlp(n2(x)))  (Gemma 2: post-attention/-MLP norms)
  PostNorm,   // x = n1(x + attn(x)); x = n2(x + mlp(x))     (BERT)
};
enum class HfActivation { GeluErf, GeluTanh, Silu };
enum class HfFusedQkv { None, Conv1DThirds, PerHead };  // gpt2 c_attn [D, 3D]; neox [H, 3, d] rows

// Tensor names of one family, "{i}" = layer index. "" = the family has no such tensor.
struct HfTensorNames {
  const char* prefix;  // of the base model ("transformer.", "model.", ...); checkpoints saved
                       // from the base class have none. lm_head and the MLM head never have it.
  const char* embed, *positions, *token_types, *embed_norm;  // embed_norm: ".weight"/".bias" added
  const char* attn_norm, *q, *k, *v, *qkv, *o;                // "...weight"/"...bias" added
  const char* post_attn_norm, *mlp_norm, *post_mlp_norm;
  const char* gate, *up, *down;
  const char* final_norm, *lm_head;
  const char* mlm_transform, *mlm_norm, *mlm_bias;  // BERT's masked-LM head (cls.predictions)
};

// Which layers use the sliding window when config.json has no layer_types (4.x).
enum class HfWindowRule {
  None,             // never
  AllLayers,        // every layer when sliding_window is set (mistral)
  EvenLayers,       // layers 0, 2, 4, ... (gemma2: is_sliding = not layer_idx % 2)
  MaxWindowLayers,  // use_sliding_window and layer >= max_window_layers (qwen2)
};

// One row of the registry: what a model_type means.
struct HfFamily {
  const char* model_type;
  HfNorm norm;
  const char* eps_field;  // config.json field of the norm epsilon
  HfPositions positions;
  bool causal;            // false: bidirectional encoder
  HfMlp mlp;
  HfResidual residual;
  bool embed_scale_sqrt_d;  // x = embed * sqrt(D)
  bool tied_default;        // tie_word_embeddings when config.json does not say
  bool conv1d;              // linear weights stored [in, out] (GPT-2 Conv1D)
  HfFusedQkv fused_qkv;
  bool qkv_bias, o_bias, mlp_bias, norm_bias;  // which biases the checkpoints have
  HfWindowRule window_rule;
  const char* default_activation;
  HfTensorNames names;
};

const std::vector<HfFamily>& hfFamilies();
std::string hfModelTypes();  // "\"bert\", \"gemma2\", ..." for messages

struct HfConfig {
  const HfFamily* family = nullptr;
  std::string model_type;
  int64_t n_layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp_dim = 0;
  int64_t vocab = 0, max_positions = 0, type_vocab = 0;
  double norm_eps = 1e-5;
  HfActivation activation = HfActivation::GeluTanh;
  bool tied = false;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;  // the family's, or attention_bias / mlp_bias
  bool parallel_residual = false;  // gpt_neox use_parallel_residual (else PreNorm)
  // RoPE: the inverse frequencies of the rotated features ([r/2], scaled and partial).
  double rope_theta = 10000.0;
  std::string rope_type = "default";
  std::vector<double> rope_inv_freq;
  std::optional<double> attn_softcap, final_softcap;
  double attn_scale = 0.0;          // scores * attn_scale (1/sqrt(d), or query_pre_attn_scalar^-0.5)
  std::vector<int64_t> window;      // [N]: causal window W (a query sees itself and W keys before), -1 = full
  std::string config_path;
};

// Reads FOLDER/config.json. Every problem is one InputError naming config.json and the field,
// with the supported values where there is a list ("rope_scaling.rope_type is \"yarn\" but
// attnscope supports \"default\", \"linear\", \"llama3\"").
HfConfig readHfConfig(const std::string& folder);
// The same from config.json's text; `path` names the file in errors.
HfConfig parseHfConfig(const std::string& json_text, const std::string& path);

// True when FOLDER/config.json has a "model_type" (a Hugging Face folder, not attnscope-model/1).
bool isHfModelFolder(const std::string& folder);

}  // namespace attnscope
