// What the families derived from Llama share: its tensor names, window rules and an epsilon default.
#pragma once

#include "model/config_fields.h"
#include "model/config_limits.h"
#include "model/family.h"
#include "model/model_config.h"

namespace attnscope {

inline TensorNames llamaNames() {
  return {"model.",
          {{Role::Embed, "embed_tokens"},
           {Role::AttnNorm, "layers.{i}.input_layernorm"},
           {Role::Q, "layers.{i}.self_attn.q_proj"},
           {Role::K, "layers.{i}.self_attn.k_proj"},
           {Role::V, "layers.{i}.self_attn.v_proj"},
           {Role::O, "layers.{i}.self_attn.o_proj"},
           {Role::MlpNorm, "layers.{i}.post_attention_layernorm"},
           {Role::Gate, "layers.{i}.mlp.gate_proj"},
           {Role::Up, "layers.{i}.mlp.up_proj"},
           {Role::Down, "layers.{i}.mlp.down_proj"},
           {Role::FinalNorm, "norm"},
           {Role::LmHead, "lm_head"}}};
}

// Qwen's rule without layer_types: when use_sliding_window, the layers from
// max_window_layers on slide.
inline std::vector<bool> upperLayersSlide(const ConfigFields& f, int64_t n_layers) {
  const bool on = f.boolean("use_sliding_window", false);
  const int64_t first = f.integer({"max_window_layers"}, 0, kMaxLayers, n_layers);
  std::vector<bool> sliding(n_layers);
  for (int64_t i = 0; i < n_layers; ++i) sliding[i] = on && i >= first;
  return sliding;
}

// Mistral's and Phi-3's rule: every layer slides (when sliding_window is set).
inline std::vector<bool> everyLayerSlides(const ConfigFields&, int64_t n_layers) { return std::vector<bool>(n_layers, true); }

// OLMo 2's and Phi-3's rms_norm_eps default, 1e-5 (the shared reading's is 1e-6).
inline void rmsEpsDefault1e5(const ConfigFields& f, ModelConfig& c) { c.norm_eps = f.number("rms_norm_eps", 1e-5, 1e-30, 1.0); }

}  // namespace attnscope
