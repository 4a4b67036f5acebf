// Qwen2 and Qwen2.5 (transformers' modeling_qwen2.py): Llama with q/k/v biases (no o bias)
// and a sliding window, when use_sliding_window, on the layers from max_window_layers on.
#include "model/families/llama_like.h"

namespace attnscope {

const Family& family_qwen2() {
  static const Family family = {
      "qwen2", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ true, false, false, false, "silu", llamaNames(), {nullptr, upperLayersSlide}};
  return family;
}

}  // namespace attnscope
