// attnscope-model/1 folders (docs/models.md, "Model folders"): the small GPT-2-like models
// attnscope trains and ships. LayerNorm with its affine step in float32 (the trained models'
// own arithmetic), learned or sinusoidal positions (the table computed at load), nn.Linear
// weights as .npy files, optional attention biases, an optional MLP (mlp: false = attention
// only). Read by model/own_folder.cpp from config.json's "format", not from a model_type:
// the family is not in the Hugging Face registry.
#include "model/family.h"

namespace attnscope {

const Family& family_attnscope_model() {
  static const Family family = {
      "attnscope-model/1", Norm::LayerNormFloatAffine, "ln_eps", Positions::Learned, /*causal*/ true, Mlp::Plain,
      Residual::PreNorm, /*embed_scale_sqrt_d*/ false, /*tied_default*/ false, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ true, true, true, true, "gelu",
      {"", {}},  // its .npy files are named by the format (own_folder.cpp), not by role
      {}};
  return family;
}

}  // namespace attnscope
