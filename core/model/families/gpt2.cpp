// GPT-2 (transformers' modeling_gpt2.py): LayerNorm, learned positions, Conv1D weights
// stored [in, out] with q/k/v fused in thirds, gelu_new.
#include "model/config_fields.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

void readGpt2Config(const ConfigFields& f, ModelConfig&) {
  if (f.boolean("scale_attn_by_inverse_layer_idx", false))
    f.fail("scale_attn_by_inverse_layer_idx", "is true but attnscope supports false");
}

}  // namespace

const Family& family_gpt2() {
  static const Family family = {
      "gpt2", Norm::LayerNorm, "layer_norm_epsilon", Positions::Learned, /*causal*/ true, Mlp::Plain,
      Residual::PreNorm, /*embed_scale_sqrt_d*/ false, /*tied_default*/ true, /*conv1d*/ true,
      FusedQkv::Conv1DThirds, /*qkv, o, mlp, norm biases*/ true, true, true, true, "gelu_new",
      {"transformer.",
       {{Role::Embed, "wte"},
        {Role::Positions, "wpe"},
        {Role::AttnNorm, "h.{i}.ln_1"},
        {Role::Qkv, "h.{i}.attn.c_attn"},
        {Role::O, "h.{i}.attn.c_proj"},
        {Role::MlpNorm, "h.{i}.ln_2"},
        {Role::Up, "h.{i}.mlp.c_fc"},
        {Role::Down, "h.{i}.mlp.c_proj"},
        {Role::FinalNorm, "ln_f"},
        {Role::LmHead, "lm_head"}}},
      {readGpt2Config, nullptr}};
  return family;
}

}  // namespace attnscope
