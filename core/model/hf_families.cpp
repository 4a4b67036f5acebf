// The registry of Hugging Face architectures: one row per model_type (README, "Hugging Face
// model folders"), following transformers' modeling_*.py of each family.
#include "model/hf_config.h"

namespace attnscope {

namespace {

using N = HfNorm;
using R = HfResidual;

// Llama's layout, shared by the families derived from it (mistral, qwen2).
constexpr HfTensorNames kLlamaNames = {
    "model.", "embed_tokens", "", "", "", "layers.{i}.input_layernorm", "layers.{i}.self_attn.q_proj",
    "layers.{i}.self_attn.k_proj", "layers.{i}.self_attn.v_proj", "", "layers.{i}.self_attn.o_proj", "",
    "layers.{i}.post_attention_layernorm", "", "layers.{i}.mlp.gate_proj", "layers.{i}.mlp.up_proj",
    "layers.{i}.mlp.down_proj", "norm", "lm_head", "", "", ""};

const std::vector<HfFamily> kFamilies = {
    // model_type, norm, eps field, positions, causal, mlp, residual, sqrt(D) scale, tied,
    // conv1d, fused qkv, qkv/o/mlp/norm biases, window rule, default activation, names
    {"gpt2", N::LayerNorm, "layer_norm_epsilon", HfPositions::Learned, true, HfMlp::Plain, R::PreNorm, false, true,
     true, HfFusedQkv::Conv1DThirds, true, true, true, true, HfWindowRule::None, "gelu_new",
     {"transformer.", "wte", "wpe", "", "", "h.{i}.ln_1", "", "", "", "h.{i}.attn.c_attn", "h.{i}.attn.c_proj", "",
      "h.{i}.ln_2", "", "", "h.{i}.mlp.c_fc", "h.{i}.mlp.c_proj", "ln_f", "lm_head", "", "", ""}},
    {"llama", N::RmsNorm, "rms_norm_eps", HfPositions::Rope, true, HfMlp::Gated, R::PreNorm, false, false, false,
     HfFusedQkv::None, false, false, false, false, HfWindowRule::None, "silu",
     kLlamaNames},
    {"mistral", N::RmsNorm, "rms_norm_eps", HfPositions::Rope, true, HfMlp::Gated, R::PreNorm, false, false, false,
     HfFusedQkv::None, false, false, false, false, HfWindowRule::AllLayers, "silu",
     kLlamaNames},
    {"qwen2", N::RmsNorm, "rms_norm_eps", HfPositions::Rope, true, HfMlp::Gated, R::PreNorm, false, false, false,
     HfFusedQkv::None, true, false, false, false, HfWindowRule::MaxWindowLayers, "silu",
     kLlamaNames},
    {"gemma2", N::RmsNormPlusOne, "rms_norm_eps", HfPositions::Rope, true, HfMlp::Gated, R::Sandwich, true, true,
     false, HfFusedQkv::None, false, false, false, false, HfWindowRule::EvenLayers, "gelu_pytorch_tanh",
     {"model.", "embed_tokens", "", "", "", "layers.{i}.input_layernorm", "layers.{i}.self_attn.q_proj",
      "layers.{i}.self_attn.k_proj", "layers.{i}.self_attn.v_proj", "", "layers.{i}.self_attn.o_proj",
      "layers.{i}.post_attention_layernorm", "layers.{i}.pre_feedforward_layernorm",
      "layers.{i}.post_feedforward_layernorm", "layers.{i}.mlp.gate_proj", "layers.{i}.mlp.up_proj",
      "layers.{i}.mlp.down_proj", "norm", "lm_head", "", "", ""}},
    {"gpt_neox", N::LayerNorm, "layer_norm_eps", HfPositions::Rope, true, HfMlp::Plain, R::PreNorm, false, false,
     false, HfFusedQkv::PerHead, true, true, true, true, HfWindowRule::None, "gelu",
     {"gpt_neox.", "embed_in", "", "", "", "layers.{i}.input_layernorm", "", "", "",
      "layers.{i}.attention.query_key_value", "layers.{i}.attention.dense", "", "layers.{i}.post_attention_layernorm",
      "", "", "layers.{i}.mlp.dense_h_to_4h", "layers.{i}.mlp.dense_4h_to_h", "final_layer_norm", "embed_out", "", "",
      ""}},
    {"bert", N::LayerNorm, "layer_norm_eps", HfPositions::Learned, false, HfMlp::Plain, R::PostNorm, false, true,
     false, HfFusedQkv::None, true, true, true, true, HfWindowRule::None, "gelu",
     {"bert.", "embeddings.word_embeddings", "embeddings.position_embeddings", "embeddings.token_type_embeddings",
      "embeddings.LayerNorm", "encoder.layer.{i}.attention.output.LayerNorm", "encoder.layer.{i}.attention.self.query",
      "encoder.layer.{i}.attention.self.key", "encoder.layer.{i}.attention.self.value", "",
      "encoder.layer.{i}.attention.output.dense", "", "encoder.layer.{i}.output.LayerNorm", "", "",
      "encoder.layer.{i}.intermediate.dense", "encoder.layer.{i}.output.dense", "", "cls.predictions.decoder",
      "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"}},
};

}  // namespace

const std::vector<HfFamily>& hfFamilies() { return kFamilies; }

std::string hfModelTypes() {
  std::string out;
  for (const HfFamily& f : kFamilies) out += (out.empty() ? "\"" : ", \"") + std::string(f.model_type) + "\"";
  return out;
}

}  // namespace attnscope
