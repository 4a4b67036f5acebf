// SmolLM3 (transformers' modeling_smollm3.py): Llama's layout with no RoPE on the layers
// no_rope_layers marks 0 (1 = the layer rotates: use_rope = no_rope_layers[layer]; by default
// every 4th layer, (i + 1) % no_rope_layer_interval == 0, is a NoPE layer), and a sliding
// window only with use_sliding_window (on the layer_types marked sliding, else the NoPE layers).
#include "model/families/llama_like.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

// [N]: 1 where the layer rotates q and k.
std::vector<uint8_t> ropeLayers(const ConfigFields& f, int64_t n_layers) {
  const nlohmann::json& j = f.root();
  std::vector<uint8_t> rotary(n_layers);
  if (!f.present({"no_rope_layers"}).empty()) {
    const nlohmann::json& list = j["no_rope_layers"];
    if (!list.is_array() || static_cast<int64_t>(list.size()) != n_layers)
      f.fail("no_rope_layers", "must list one 0 or 1 per layer (" + std::to_string(n_layers) + ")");
    for (int64_t i = 0; i < n_layers; ++i) {
      if (!list[i].is_number_integer() || (list[i].get<int64_t>() != 0 && list[i].get<int64_t>() != 1))
        f.fail("no_rope_layers", "entry " + std::to_string(i) + " must be 0 (no RoPE) or 1 (RoPE)");
      rotary[i] = static_cast<uint8_t>(list[i].get<int64_t>());
    }
    return rotary;
  }
  const int64_t interval = f.integer({"no_rope_layer_interval"}, 1, kMaxLayers, 4);
  for (int64_t i = 0; i < n_layers; ++i) rotary[i] = (i + 1) % interval != 0;
  return rotary;
}

std::vector<bool> noPeLayersSlide(const ConfigFields& f, int64_t n_layers) {
  const bool on = f.boolean("use_sliding_window", false);
  const std::vector<uint8_t> rotary = ropeLayers(f, n_layers);
  std::vector<bool> sliding(n_layers);
  for (int64_t i = 0; i < n_layers; ++i) sliding[i] = on && !rotary[i];
  return sliding;
}

void readSmolLm3Config(const ConfigFields& f, ModelConfig& c) {
  c.rotary = ropeLayers(f, c.n_layers);
  if (!f.boolean("use_sliding_window", false)) c.window.assign(c.n_layers, -1);
}

}  // namespace

const Family& family_smollm3() {
  static const Family family = {
      "smollm3", Norm::RmsNorm, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated, Residual::PreNorm,
      /*embed_scale_sqrt_d*/ false, /*tied_default*/ true, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "silu", llamaNames(), {readSmolLm3Config, noPeLayersSlide}};
  return family;
}

}  // namespace attnscope
