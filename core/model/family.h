// A model family (transformers' model_type) as one declaration: its config.json keys, its
// tensors by role, the shared pieces its forward pass is built from, and named hooks for
// behaviour of its own. Each family is one file in model/families/ plus one line in
// families/registry.cpp (docs/HOWTO-add-a-family.md).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

class ConfigFields;
struct ModelConfig;

// RmsNormPlusOne: x_hat * (1 + w) (Gemma). LayerNormFloatAffine: attnscope-model/1's, whose
// affine step is in float32 (families/attnscope_model.cpp).
enum class Norm { LayerNorm, RmsNorm, RmsNormPlusOne, LayerNormFloatAffine };
enum class Positions { Learned, Rope };                    // learned: added to the embedding
enum class Mlp { Plain, Gated };                           // act(up x) vs act(gate x) * (up x), then down
enum class Residual {
  PreNorm,    // x += attn(n1(x)); x += mlp(n2(x))
  Parallel,   // x += attn(n1(x)) + mlp(n2(x))               (GPT-NeoX use_parallel_residual)
  Sandwich,   // x += n1'(attn(n1(x))); x += n2'(mlp(n2(x)))  (Gemma 2: post-attention/-MLP norms;
              //  a family without the AttnNorm / MlpNorm roles has no pre-norms: OLMo 2)
  PostNorm,   // x = n1(x + attn(x)); x = n2(x + mlp(x))     (BERT)
};
// gpt2 c_attn [D, 3D]; neox [H, 3, d] rows; Stacked: q, then k, then v rows, [(H + 2G) d, D] (Phi-3 qkv_proj)
enum class FusedQkv { None, Conv1DThirds, PerHead, Stacked };

// What a tensor does in the model, whatever the family calls it.
enum class Role {
  Embed, Positions, TokenTypes, EmbedNorm,             // embeddings (EmbedNorm: BERT's LayerNorm)
  AttnNorm, Q, K, V, Qkv, O, QNorm, KNorm, PostAttnNorm,  // attention (QNorm/KNorm: [head_dim], per head)
  QProjNorm, KProjNorm,  // RMSNorm over the whole q [H*d] / k [G*d] projection before the head split (OLMo 2)
  MlpNorm, PostMlpNorm, Gate, Up, Down,                // MLP
  GateUp,  // gate and up in one [2M, D]: gate rows first (Phi-3 gate_up_proj)
  FinalNorm, LmHead, MlmTransform, MlmNorm, MlmBias,   // output head (Mlm*: BERT's cls.predictions)
};

// A family's tensor names by role; "{i}" stands for the layer index. A role not listed is a
// tensor the family does not have. Norms and linear maps get ".weight" / ".bias" added.
class TensorNames {
 public:
  TensorNames(const char* prefix, std::initializer_list<std::pair<const Role, const char*>> names)
      : prefix_(prefix), names_(names) {}
  // Of the base model ("transformer.", "model.", ...); checkpoints saved from the base class
  // have none. The output heads (LmHead, Mlm*) never have it.
  const char* prefix() const { return prefix_; }
  bool has(Role role) const { return names_.count(role) != 0; }
  std::string of(Role role, int64_t layer = -1) const;  // "" when the family has none
  // These names with `more` added or replacing a role's (a family built on another's layout).
  TensorNames with(std::initializer_list<std::pair<const Role, const char*>> more) const {
    TensorNames out = *this;
    for (const auto& [role, name] : more) out.names_[role] = name;
    return out;
  }
  // These names without `roles` (a family that lacks some of another's tensors).
  TensorNames without(std::initializer_list<Role> roles) const {
    TensorNames out = *this;
    for (Role role : roles) out.names_.erase(role);
    return out;
  }

 private:
  const char* prefix_;
  std::map<Role, const char*> names_;
};

// Behaviour of one family beyond its fields; null = none.
struct FamilyHooks {
  // config.json keys only this family reads, after the shared ones (refusing options
  // attnscope does not compute, switching a residual layout, ...).
  void (*read_config)(const ConfigFields& fields, ModelConfig& config) = nullptr;
  // Which layers slide when config.json has no layer_types (4.x); null: none ever does.
  std::vector<bool> (*sliding_layers)(const ConfigFields& fields, int64_t n_layers) = nullptr;
};

// One family: the shared pieces it is built from, its config.json defaults, its tensors.
struct Family {
  const char* model_type;
  Norm norm;
  const char* eps_field;  // config.json field of the norm epsilon
  Positions positions;
  bool causal;            // false: bidirectional encoder
  Mlp mlp;
  Residual residual;
  bool embed_scale_sqrt_d;  // x = embed * sqrt(D)
  bool tied_default;        // tie_word_embeddings when config.json does not say
  bool conv1d;              // linear weights stored [in, out] (GPT-2 Conv1D)
  FusedQkv fused_qkv;
  bool qkv_bias, o_bias, mlp_bias, norm_bias;  // which biases the checkpoints have
  const char* default_activation;
  TensorNames names;
  FamilyHooks hooks;
};

// The registry (families/registry.cpp): every family attnscope runs.
const std::vector<const Family*>& families();
std::string familyTypes();  // "\"bert\", \"gemma2\", ..." for messages

}  // namespace attnscope
