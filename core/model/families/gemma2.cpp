// Gemma 2 (transformers' modeling_gemma2.py): Llama's tensor names with its own norms, RMSNorm
// with (1 + w) weights, embeddings
// scaled by sqrt(hidden), sandwich norms around attention and MLP, sliding window on even
// layers, soft-capped scores and logits (config.json), queries scaled by query_pre_attn_scalar.
#include "model/families/llama_like.h"

namespace attnscope {
namespace {

std::vector<bool> evenLayersSlide(const ConfigFields&, int64_t n_layers) {
  std::vector<bool> sliding(n_layers);
  for (int64_t i = 0; i < n_layers; ++i) sliding[i] = i % 2 == 0;  // is_sliding = not layer_idx % 2
  return sliding;
}

}  // namespace

const Family& family_gemma2() {
  static const Family family = {
      "gemma2", Norm::RmsNormPlusOne, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated,
      Residual::Sandwich, /*embed_scale_sqrt_d*/ true, /*tied_default*/ true, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "gelu_pytorch_tanh",
      llamaNames().with({{Role::PostAttnNorm, "layers.{i}.post_attention_layernorm"},
                         {Role::MlpNorm, "layers.{i}.pre_feedforward_layernorm"},
                         {Role::PostMlpNorm, "layers.{i}.post_feedforward_layernorm"}}),
      {nullptr, evenLayersSlide}};
  return family;
}

}  // namespace attnscope
