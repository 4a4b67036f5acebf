#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "model/config_fields.h"
#include "model/config_limits.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kMaxPositions = 1 << 20;
constexpr size_t kMaxConfigBytes = size_t{16} << 20;

Activation readActivation(const ConfigFields& f, const Family& family) {
  const std::string field = f.present({"hidden_activation", "hidden_act", "activation_function"});
  const std::string name = field.empty() ? family.default_activation : f.text(f.root(), field, field, "");
  if (const auto a = activationNamed(name)) return *a;
  f.fail(field, "is \"" + name + "\" but attnscope supports " +
                    quotedList({"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "silu", "swish"}));
}

// inv divided by params[key] (`where`.key), one positive number per frequency.
std::vector<double> dividedByFactors(const ConfigFields& f, const json& params, const std::string& where,
                                     const std::string& key, std::vector<double> inv) {
  const std::string field = where + "." + key;
  const json& factors = params.contains(key) ? params[key] : json();
  if (!factors.is_array() || factors.size() != inv.size())
    f.fail(field, "must list " + std::to_string(inv.size()) + " numbers (one per pair of rotated features)");
  for (size_t i = 0; i < factors.size(); ++i) {
    if (!factors[i].is_number() || !(factors[i].get<double>() > 0.0) || !std::isfinite(factors[i].get<double>()))
      f.fail(field, "entry " + std::to_string(i) + " must be a positive number");
    inv[i] /= factors[i].get<double>();
  }
  return inv;
}

// longrope (modeling_rope_utils' _compute_longrope_parameters, Phi-3): the inverse frequencies
// divided by short_factor within original_max_position_embeddings and by long_factor past it
// (RopeParams::longAt), cos and sin times attention_factor in both (default
// sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings / original_max_position_embeddings,
// or `factor` without the latter).
void longRope(const ConfigFields& f, const json& params, const std::string& where, const ModelConfig& c, RopeParams& r) {
  const std::vector<double> plain = r.inv_freq;
  r.inv_freq = dividedByFactors(f, params, where, "short_factor", plain);
  r.long_inv_freq = dividedByFactors(f, params, where, "long_factor", plain);
  const std::string key = "original_max_position_embeddings";
  const bool in_params = params.contains(key) && !params[key].is_null();
  const bool given = in_params || !f.present({"original_max_position_embeddings"}).empty();
  const double original = in_params ? f.number(params, key, where + "." + key, 0.0, 1.0, 1e9)
                                    : f.number(key.c_str(), static_cast<double>(c.max_positions), 1.0, 1e9);
  const double factor = given ? static_cast<double>(c.max_positions) / original
                              : f.number(params, "factor", where + ".factor", 1.0, 1e-6, 1e6);
  const double computed = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original));
  r.attention_factor = f.number(params, "attention_factor", where + ".attention_factor", computed, 1e-6, 1e6);
  r.original_context = static_cast<int64_t>(original);
}

// RoPE inverse frequencies, transformers' modeling_rope_utils: default, linear, llama3.
std::vector<double> ropeInvFreq(const ConfigFields& f, const json& scaling, const std::string& where, double theta,
                                int64_t rotary_dims, const std::string& type) {
  std::vector<double> inv = ropeDefaultInvFreq(theta, rotary_dims);
  if (type == "default") return inv;
  const double factor = f.number(scaling, "factor", where + ".factor", 0.0, 1e-6, 1e6);
  if (factor == 0.0) f.fail(where + ".factor", "is missing (rope_type \"" + type + "\" needs it)");
  if (type == "linear") {
    for (double& x : inv) x /= factor;
    return inv;
  }
  const double low = f.number(scaling, "low_freq_factor", where + ".low_freq_factor", 1.0, 1e-6, 1e6);
  const double high = f.number(scaling, "high_freq_factor", where + ".high_freq_factor", 4.0, 1e-6, 1e6);
  const double old_len = f.number(scaling, "original_max_position_embeddings",
                                  where + ".original_max_position_embeddings", 8192.0, 1.0, 1e9);
  if (!(high > low)) f.fail(where + ".high_freq_factor", "must be greater than low_freq_factor");
  const double low_wavelen = old_len / low, high_wavelen = old_len / high;
  for (double& x : inv) {
    const double wavelen = 2.0 * M_PI / x;
    if (wavelen > low_wavelen) {
      x /= factor;
    } else if (!(wavelen < high_wavelen)) {  // medium frequencies: smoothed between the two
      const double smooth = (old_len / wavelen - low) / (high - low);
      x = (1.0 - smooth) * x / factor + smooth * x;
    }
  }
  return inv;
}

// The partial rotary factor of config.json's top level (4.x rotary_pct).
double topLevelPartial(const ConfigFields& f) {
  return f.number(f.root().contains("partial_rotary_factor") ? "partial_rotary_factor" : "rotary_pct", 1.0, 1e-9, 1.0);
}

// rope_parameters (5.x: one object, or one per layer type) or rope_theta / rope_scaling /
// rotary_pct (4.x).
void readRope(const ConfigFields& f, ModelConfig& c) {
  const json& j = f.root();
  const bool v5 = j.contains("rope_parameters") && j["rope_parameters"].is_object();
  static const json kNone = json::object();
  if (!v5 && j.contains("rope_scaling") && !j["rope_scaling"].is_null() && !j["rope_scaling"].is_object())
    f.fail("rope_scaling", "must be an object or null");
  const double theta_4x = f.number(j.contains("rope_theta") ? "rope_theta" : "rotary_emb_base", 10000.0, 1.0 + 1e-9, 1e12);
  const json& rp = v5 ? j["rope_parameters"] : kNone;
  const bool per_type = rp.contains("full_attention") || rp.contains("sliding_attention");
  if (!per_type) {
    const json& scaling = v5 ? rp : (j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"] : kNone);
    setModelRope(c, readRopeParams(f, scaling, v5 ? "rope_parameters" : "rope_scaling", theta_4x, c));
    return;
  }
  // Per layer type: the full-attention layers' RoPE is the model's; the sliding ones' base
  // falls back to rope_local_base_freq (transformers 5's Gemma3TextConfig).
  const double local_4x = f.number("rope_local_base_freq", 10000.0, 1.0 + 1e-9, 1e12);
  auto ofType = [&](const char* type, double theta) {
    const std::string where = std::string("rope_parameters.") + type;
    if (rp.contains(type) && !rp[type].is_object()) f.fail(where, "must be an object");
    return readRopeParams(f, rp.contains(type) ? rp[type] : kNone, where, theta, c);
  };
  const RopeParams full = ofType("full_attention", theta_4x), sliding = ofType("sliding_attention", local_4x);
  setModelRope(c, full);
  const std::vector<bool> is_sliding = slidingLayers(f, c);
  for (int64_t i = 0; i < c.n_layers; ++i) c.layer_rope.push_back(is_sliding[i] ? sliding : full);
}

// Per layer: -1, or the causal window W = sliding_window - 1 (a query sees itself and the
// sliding_window - 1 keys before it, as transformers' sliding-window masks do).
void readWindows(const ConfigFields& f, ModelConfig& c) {
  c.window.assign(c.n_layers, -1);
  if (!c.family->hooks.sliding_layers) return;
  const std::vector<bool> sliding = slidingLayers(f, c);
  if (f.present({"sliding_window"}).empty()) return;
  const int64_t window = f.integer({"sliding_window"}, 1, kMaxPositions);
  for (int64_t i = 0; i < c.n_layers; ++i)
    if (sliding[i]) c.window[i] = window - 1;
}

void readSizes(const ConfigFields& f, ModelConfig& c) {
  c.n_layers = f.integer({"num_hidden_layers", "n_layer"}, 1, kMaxLayers);
  c.hidden = f.integer({"hidden_size", "n_embd"}, 1, kMaxDim);
  c.heads = f.integer({"num_attention_heads", "n_head"}, 1, kMaxDim);
  c.kv_heads = f.integer({"num_key_value_heads"}, 1, c.heads, c.heads);
  if (c.heads % c.kv_heads != 0)
    f.fail("num_key_value_heads", std::to_string(c.kv_heads) + " does not divide num_attention_heads " + std::to_string(c.heads));
  if (f.present({"head_dim"}).empty() && c.hidden % c.heads != 0)
    f.fail("num_attention_heads", std::to_string(c.heads) + " does not divide hidden_size " + std::to_string(c.hidden) +
                                      " (give head_dim)");
  c.head_dim = f.integer({"head_dim"}, 1, kMaxDim, c.hidden / c.heads);
  if (c.head_dim * c.heads > kMaxDim * 4) f.fail("head_dim", "x num_attention_heads is over " + std::to_string(kMaxDim * 4));
  if (c.family->fused_qkv != FusedQkv::None && c.family->fused_qkv != FusedQkv::Stacked && c.head_dim * c.heads != c.hidden)
    f.fail("head_dim", "x num_attention_heads must be hidden_size " + std::to_string(c.hidden) + " for " + c.model_type +
                           "'s fused q/k/v weight");
  c.mlp_dim = f.integer({"intermediate_size", "n_inner"}, 1, kMaxDim * 8, 4 * c.hidden);
  c.vocab = f.integer({"vocab_size"}, 1, kMaxVocab);
  c.max_positions = f.integer({"max_position_embeddings", "n_positions"}, 1, kMaxPositions,
                              c.family->positions == Positions::Rope ? std::optional<int64_t>(kMaxPositions) : std::nullopt);
  if (f.present({"max_position_embeddings"}).empty() && !f.present({"n_positions"}).empty()) c.context_key = "n_positions";
  c.type_vocab = c.family->names.has(Role::TokenTypes) ? f.integer({"type_vocab_size"}, 1, kMaxDim, 2) : 0;
}

}  // namespace

RopeParams readRopeParams(const ConfigFields& f, const json& params, const std::string& where, double theta,
                          const ModelConfig& c) {
  const bool v5 = where != "rope_scaling";  // 4.x's rope_scaling carries neither base nor partial factor
  RopeParams r;
  r.theta = v5 ? f.number(params, "rope_theta", where + ".rope_theta", theta, 1.0 + 1e-9, 1e12) : theta;
  const std::string type_key = params.contains("rope_type") ? "rope_type" : "type";
  r.type = f.text(params, type_key, where + "." + type_key, "default");
  if (r.type != "default" && r.type != "linear" && r.type != "llama3" && r.type != "longrope")
    f.fail(where + "." + type_key,
           "is \"" + r.type + "\" but attnscope supports " + quotedList({"default", "linear", "llama3", "longrope"}));
  double partial = topLevelPartial(f);
  if (v5) partial = f.number(params, "partial_rotary_factor", where + ".partial_rotary_factor", partial, 1e-9, 1.0);
  const int64_t rotary_dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  if (rotary_dims < 2 || rotary_dims % 2 != 0)
    f.fail(v5 ? where + ".partial_rotary_factor" : "rotary_pct",
           "gives " + std::to_string(rotary_dims) + " rotary features of head_dim " + std::to_string(c.head_dim) +
               " (must be an even number >= 2)");
  r.inv_freq = ropeInvFreq(f, params, where, r.theta, rotary_dims, r.type == "longrope" ? "default" : r.type);
  if (r.type == "longrope") longRope(f, params, where, c, r);
  return r;
}

bool longRopeAt(const ModelConfig& c, int64_t L) {
  if (c.layer_rope.empty()) return ropeOf(c, 0).longAt(L);
  return std::any_of(c.layer_rope.begin(), c.layer_rope.end(), [L](const RopeParams& r) { return r.longAt(L); });
}

std::vector<bool> slidingLayers(const ConfigFields& f, const ModelConfig& c) {
  const json& j = f.root();
  if (!j.contains("layer_types") || j["layer_types"].is_null()) {
    const auto rule = c.family->hooks.sliding_layers;
    return rule ? rule(f, c.n_layers) : std::vector<bool>(c.n_layers, false);
  }
  const json& types = j["layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != c.n_layers)
    f.fail("layer_types", "must list one type per layer (" + std::to_string(c.n_layers) + ")");
  std::vector<bool> sliding(c.n_layers, false);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string t = types[i].is_string() ? types[i].get<std::string>() : "";
    if (t != "full_attention" && t != "sliding_attention")
      f.fail("layer_types", "entry " + std::to_string(i) + " must be " + quotedList({"full_attention", "sliding_attention"}));
    sliding[i] = t == "sliding_attention";
  }
  return sliding;
}

std::optional<Activation> activationNamed(const std::string& name) {
  if (name == "gelu") return Activation::GeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::GeluTanh;
  if (name == "silu" || name == "swish") return Activation::Silu;
  return std::nullopt;
}

std::vector<double> ropeDefaultInvFreq(double theta, int64_t rotary_dims) {
  std::vector<double> inv(rotary_dims / 2);
  for (int64_t i = 0; i < rotary_dims / 2; ++i)
    inv[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dims));
  return inv;
}

std::string quotedList(std::initializer_list<const char*> values) {
  std::string out;
  for (const char* v : values) out += (out.empty() ? "\"" : ", \"") + std::string(v) + "\"";
  return out;
}

ModelConfig parseHfConfig(const std::string& json_text, const std::string& path) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception&) {
    throw InputError(path + ": not valid JSON");
  }
  if (!j.is_object()) throw InputError(path + ": must be a JSON object");
  const ConfigFields f(j, path);
  ModelConfig c;
  c.config_path = path;
  c.model_type = f.text(j, "model_type", "model_type", "");
  for (const Family* family : families())
    if (c.model_type == family->model_type) c.family = family;
  if (!c.family)
    f.fail("model_type", (c.model_type.empty() ? std::string("is missing") : "is \"" + c.model_type + "\"") +
                             " but attnscope supports " + familyTypes());
  const Family& fam = *c.family;
  readSizes(f, c);
  c.norm_eps = f.number(fam.eps_field, fam.norm == Norm::LayerNorm ? 1e-5 : 1e-6, 1e-30, 1.0);
  c.activation = readActivation(f, fam);
  c.tied = f.boolean("tie_word_embeddings", fam.tied_default);
  const bool attention_bias = f.boolean("attention_bias", fam.qkv_bias);
  c.qkv_bias = attention_bias;
  // attention_bias switches every attention bias (llama: q, k, v and o; gpt_neox: qkv and
  // dense), except in qwen2, whose q/k/v biases come without an o bias.
  c.o_bias = fam.o_bias ? attention_bias : attention_bias && !fam.qkv_bias;
  c.mlp_bias = f.boolean("mlp_bias", fam.mlp_bias);
  if (j.contains("eos_token_id")) {  // generation stops there; malformed entries are left out, as transformers reads them
    const json& eos = j["eos_token_id"];
    for (const json& id : eos.is_array() ? eos : json::array({eos}))
      if (id.is_number_integer()) c.eos_ids.push_back(id.get<int64_t>());
  }
  if (fam.positions == Positions::Rope) readRope(f, c);
  c.rotary.assign(c.n_layers, fam.positions == Positions::Rope ? 1 : 0);
  readWindows(f, c);
  c.attn_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  if (!f.present({"query_pre_attn_scalar"}).empty())
    c.attn_scale = 1.0 / std::sqrt(f.number("query_pre_attn_scalar", 1.0, 1e-9, 1e12));
  if (!f.present({"attn_logit_softcapping"}).empty()) c.attn_softcap = f.number("attn_logit_softcapping", 0.0, 1e-9, 1e12);
  if (!f.present({"final_logit_softcapping"}).empty()) c.final_softcap = f.number("final_logit_softcapping", 0.0, 1e-9, 1e12);
  if (fam.hooks.read_config) fam.hooks.read_config(f, c);
  return c;
}

ModelConfig readHfConfig(const std::string& folder) {
  const std::string path = (fs::path(folder) / "config.json").string();
  return parseHfConfig(readSmallFile(path, kMaxConfigBytes, "a model's config.json"), path);
}

bool isHfModelFolder(const std::string& folder) {
  const fs::path path = fs::path(folder) / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    const json j = json::parse(readSmallFile(path.string(), kMaxConfigBytes, "a model's config.json"));
    return j.is_object() && j.contains("model_type") && !j.contains("format");
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace attnscope
