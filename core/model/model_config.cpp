#include "model/model_config.h"

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

// rope_parameters (5.x) or rope_theta / rope_scaling / rotary_pct (4.x).
void readRope(const ConfigFields& f, ModelConfig& c) {
  const json& j = f.root();
  const bool v5 = j.contains("rope_parameters") && j["rope_parameters"].is_object();
  static const json kNone = json::object();
  const json& scaling = v5 ? j["rope_parameters"] : (j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"] : kNone);
  if (!v5 && j.contains("rope_scaling") && !j["rope_scaling"].is_null() && !j["rope_scaling"].is_object())
    f.fail("rope_scaling", "must be an object or null");
  const std::string where = v5 ? "rope_parameters" : "rope_scaling";
  const double theta_4x = f.number(j.contains("rope_theta") ? "rope_theta" : "rotary_emb_base", 10000.0, 1.0 + 1e-9, 1e12);
  c.rope_theta = v5 ? f.number(scaling, "rope_theta", where + ".rope_theta", theta_4x, 1.0 + 1e-9, 1e12) : theta_4x;
  const std::string type_key = scaling.contains("rope_type") ? "rope_type" : "type";
  c.rope_type = f.text(scaling, type_key, where + "." + type_key, "default");
  if (c.rope_type != "default" && c.rope_type != "linear" && c.rope_type != "llama3")
    f.fail(where + "." + type_key, "is \"" + c.rope_type + "\" but attnscope supports " + quotedList({"default", "linear", "llama3"}));
  double partial = f.number(j.contains("partial_rotary_factor") ? "partial_rotary_factor" : "rotary_pct", 1.0, 1e-9, 1.0);
  if (v5) partial = f.number(scaling, "partial_rotary_factor", "rope_parameters.partial_rotary_factor", partial, 1e-9, 1.0);
  const int64_t rotary_dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  if (rotary_dims < 2 || rotary_dims % 2 != 0)
    f.fail(v5 ? "rope_parameters.partial_rotary_factor" : "rotary_pct",
           "gives " + std::to_string(rotary_dims) + " rotary features of head_dim " + std::to_string(c.head_dim) +
               " (must be an even number >= 2)");
  c.rope_inv_freq = ropeInvFreq(f, scaling, where, c.rope_theta, rotary_dims, c.rope_type);
}

// Per layer: -1, or the causal window W = sliding_window - 1 (a query sees itself and the
// sliding_window - 1 keys before it, as transformers' sliding-window masks do).
void readWindows(const ConfigFields& f, ModelConfig& c) {
  const json& j = f.root();
  c.window.assign(c.n_layers, -1);
  const auto family_rule = c.family->hooks.sliding_layers;
  if (!family_rule) return;
  std::vector<bool> sliding(c.n_layers, false);
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& types = j["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.n_layers)
      f.fail("layer_types", "must list one type per layer (" + std::to_string(c.n_layers) + ")");
    for (int64_t i = 0; i < c.n_layers; ++i) {
      const std::string t = types[i].is_string() ? types[i].get<std::string>() : "";
      if (t != "full_attention" && t != "sliding_attention")
        f.fail("layer_types", "entry " + std::to_string(i) + " must be " + quotedList({"full_attention", "sliding_attention"}));
      sliding[i] = t == "sliding_attention";
    }
  } else {
    sliding = family_rule(f, c.n_layers);
  }
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
  if (c.family->fused_qkv != FusedQkv::None && c.head_dim * c.heads != c.hidden)
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
