// Llama 2 and 3 (transformers' modeling_llama.py): RMSNorm, RoPE (default, linear or llama3
// scaling), gated SiLU MLP, grouped K/V heads, no biases unless attention_bias / mlp_bias.
#include "model/families/llama_like.h"

namespace attnscope {

const Family& family_llama() {
  static const Family family = {
      "llama", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu", llamaNames(), {}};
  return family;
}

}  // namespace attnscope
