// OLMo 2 (transformers' modeling_olmo2.py, Olmo2ForCausalLM): Llama's projections and MLP
// with an RMSNorm over the whole q projection [H*d] and the whole k projection [G*d] before
// the head split (not per head), no pre-norms: post_attention_layernorm and
// post_feedforward_layernorm on the outputs of attention and MLP, before the residual add;
// rms_norm_eps 1e-5 by default; untied output head.
#include "model/families/llama_like.h"

namespace attnscope {

const Family& family_olmo2() {
  static const Family family = {
      "olmo2", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::Sandwich,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu",
      llamaNames()
          .without({Role::AttnNorm, Role::MlpNorm})
          .with({{Role::QProjNorm, "layers.{i}.self_attn.q_norm"},
                 {Role::KProjNorm, "layers.{i}.self_attn.k_norm"},
                 {Role::PostAttnNorm, "layers.{i}.post_attention_layernorm"},
                 {Role::PostMlpNorm, "layers.{i}.post_feedforward_layernorm"}}),
      {rmsEpsDefault1e5, nullptr}};
  return family;
}

}  // namespace attnscope
