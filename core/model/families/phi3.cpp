// Phi-3, Phi-3.5 and Phi-4-mini (transformers' modeling_phi3.py, Phi3ForCausalLM): Llama's
// layer with q/k/v fused in qkv_proj (q, k, v rows one after another) and gate/up fused in
// gate_up_proj (gate rows first), partial rotary (partial_rotary_factor, Phi-4-mini's 0.75),
// RoPE scaling longrope (short factors; a text past original_max_position_embeddings, where
// transformers switches every position to the long factors, is refused), a sliding window on
// every layer when sliding_window is set, rms_norm_eps 1e-5 by default, untied lm_head.
#include "model/families/llama_like.h"

namespace attnscope {

const Family& family_phi3() {
  static const Family family = {
      "phi3", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::Stacked,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu",
      llamaNames()
          .without({Role::Q, Role::K, Role::V, Role::Gate, Role::Up})
          .with({{Role::Qkv, "layers.{i}.self_attn.qkv_proj"}, {Role::GateUp, "layers.{i}.mlp.gate_up_proj"}}),
      {rmsEpsDefault1e5, everyLayerSlides}};
  return family;
}

}  // namespace attnscope
