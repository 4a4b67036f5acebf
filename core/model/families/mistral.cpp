// Mistral (transformers' modeling_mistral.py): Llama with a sliding window on every layer.
#include "model/families/llama_like.h"

namespace attnscope {

const Family& family_mistral() {
  static const Family family = {
      "mistral", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu", llamaNames(), {nullptr, everyLayerSlides}};
  return family;
}

}  // namespace attnscope
