// Qwen3 (transformers' modeling_qwen3.py): Llama's layout with an RMSNorm per head on q and
// on k (q_norm, k_norm [head_dim]) before RoPE, head_dim its own config key, no q/k/v bias,
// and a sliding window only where use_sliding_window and layer_types (or max_window_layers)
// say so: without use_sliding_window, Qwen3Config sets sliding_window to None.
#include "model/families/llama_like.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

void readQwen3Config(const ConfigFields& f, ModelConfig& c) {
  if (!f.boolean("use_sliding_window", false)) c.window.assign(c.n_layers, -1);
}

}  // namespace

const Family& family_qwen3() {
  static const Family family = {
      "qwen3", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu",
      llamaNames().with({{Role::QNorm, "layers.{i}.self_attn.q_norm"}, {Role::KNorm, "layers.{i}.self_attn.k_norm"}}),
      {readQwen3Config, upperLayersSlide}};
  return family;
}

}  // namespace attnscope
