// Gemma 3 text (transformers' modeling_gemma3.py, Gemma3ForCausalLM): Gemma 2's layout
// (RMSNorm with (1 + w), sandwich norms, embeddings x sqrt(hidden), queries scaled by
// query_pre_attn_scalar^-0.5, optional soft-caps) plus an RMSNorm per head on q and on k
// (q_norm, k_norm, (1 + w) too) before RoPE, local (sliding) and global layers in the pattern
// layer_types states (4.x: every sliding_window_pattern-th layer is global), and a RoPE per
// layer type: the global layers' rope_theta (default 1e6) and rope_scaling, the local ones'
// rope_local_base_freq (default 10000) unscaled, or transformers 5's rope_parameters keyed
// by layer type.
#include "model/families/llama_like.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

using nlohmann::json;

std::vector<bool> patternSlides(const ConfigFields& f, int64_t n_layers) {
  const int64_t pattern = f.integer({"sliding_window_pattern"}, 1, kMaxLayers, 6);
  std::vector<bool> sliding(n_layers);
  for (int64_t i = 0; i < n_layers; ++i) sliding[i] = (i + 1) % pattern != 0;
  return sliding;
}

// The global layers' RoPE object: rope_parameters.full_attention (5.x), a flat rope_parameters,
// or rope_scaling (4.x); `where` gets its name.
const json& globalRopeObject(const json& j, std::string& where) {
  static const json kNone = json::object();
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const json& rp = j["rope_parameters"];
    const bool per_type = rp.contains("full_attention") || rp.contains("sliding_attention");
    where = per_type ? "rope_parameters.full_attention" : "rope_parameters";
    return !per_type ? rp : rp.contains("full_attention") ? rp["full_attention"] : kNone;
  }
  where = "rope_scaling";
  return j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"] : kNone;
}

// Gemma3TextConfig's RoPE defaults (global base 1e6, local 10000) where config.json gives no
// base, and the local layers' unscaled RoPE when it has no RoPE per layer type (4.x).
void readGemma3Rope(const ConfigFields& f, ModelConfig& c) {
  std::string where;
  const json& global = globalRopeObject(f.root(), where);
  RopeParams full{c.rope_theta,          c.rope_type, c.rope_inv_freq, c.rope_attention_factor,
                  c.rope_original_context, c.rope_long_inv_freq};
  if (!f.root().contains("rope_theta") && !global.contains("rope_theta")) {
    full = readRopeParams(f, global, where, 1e6, c);
    c.rope_theta = full.theta, c.rope_inv_freq = full.inv_freq;
  }
  const std::vector<bool> sliding = slidingLayers(f, c);
  const bool per_type = !c.layer_rope.empty();
  const RopeParams local =
      per_type ? RopeParams{}
               : readRopeParams(f, json::object(), "rope_parameters.sliding_attention",
                                f.number("rope_local_base_freq", 10000.0, 1.0 + 1e-9, 1e12), c);
  c.layer_rope.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i)
    if (!sliding[i] || !per_type) c.layer_rope[i] = sliding[i] ? local : full;
}

void readGemma3Config(const ConfigFields& f, ModelConfig& c) {
  if (f.boolean("use_bidirectional_attention", false))
    f.fail("use_bidirectional_attention", "is true but attnscope supports false (a causal decoder)");
  readGemma3Rope(f, c);
  // Gemma3TextConfig's defaults: sliding_window 4096, query_pre_attn_scalar 256.
  if (f.present({"sliding_window"}).empty()) {
    const std::vector<bool> sliding = slidingLayers(f, c);
    for (int64_t i = 0; i < c.n_layers; ++i) c.window[i] = sliding[i] ? 4096 - 1 : -1;
  }
  if (f.present({"query_pre_attn_scalar"}).empty()) c.attn_scale = 1.0 / 16.0;
}

}  // namespace

const Family& family_gemma3_text() {
  static const Family family = {
      "gemma3_text", Norm::RmsNormPlusOne, "rms_norm_eps", Positions::Rope, /*causal*/ true, Mlp::Gated,
      Residual::Sandwich, /*embed_scale_sqrt_d*/ true, /*tied_default*/ true, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ false, false, false, false, "gelu_pytorch_tanh",
      llamaNames().with({{Role::QNorm, "layers.{i}.self_attn.q_norm"},
                         {Role::KNorm, "layers.{i}.self_attn.k_norm"},
                         {Role::PostAttnNorm, "layers.{i}.post_attention_layernorm"},
                         {Role::MlpNorm, "layers.{i}.pre_feedforward_layernorm"},
                         {Role::PostMlpNorm, "layers.{i}.post_feedforward_layernorm"}}),
      {readGemma3Config, patternSlides}};
  return family;
}

}  // namespace attnscope
