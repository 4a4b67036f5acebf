// GPT-NeoX and Pythia (transformers' modeling_gpt_neox.py): LayerNorm, partial RoPE
// (rotary_pct), q/k/v fused per head ([H, 3, d] rows), parallel residual unless
// use_parallel_residual is false.
#include "model/config_fields.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

void readNeoxConfig(const ConfigFields& f, ModelConfig& c) { c.parallel_residual = f.boolean("use_parallel_residual", true); }

}  // namespace

const Family& family_gpt_neox() {
  static const Family family = {
      "gpt_neox", Norm::LayerNorm, "layer_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Plain,
      Residual::PreNorm, /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false,
      FusedQkv::PerHead, /*qkv, o, mlp, norm biases*/ true, true, true, true, "gelu",
      {"gpt_neox.",
       {{Role::Embed, "embed_in"},
        {Role::AttnNorm, "layers.{i}.input_layernorm"},
        {Role::Qkv, "layers.{i}.attention.query_key_value"},
        {Role::O, "layers.{i}.attention.dense"},
        {Role::MlpNorm, "layers.{i}.post_attention_layernorm"},
        {Role::Up, "layers.{i}.mlp.dense_h_to_4h"},
        {Role::Down, "layers.{i}.mlp.dense_4h_to_h"},
        {Role::FinalNorm, "final_layer_norm"},
        {Role::LmHead, "embed_out"}}},
      {readNeoxConfig, nullptr}};
  return family;
}

}  // namespace attnscope
