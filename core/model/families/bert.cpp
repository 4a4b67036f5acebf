// BERT (transformers' modeling_bert.py): a bidirectional encoder, post-norm residuals,
// learned positions and token types, an embedding LayerNorm, and the masked-LM head
// (cls.predictions) when the checkpoint has one.
#include "model/config_fields.h"
#include "model/model_config.h"

namespace attnscope {
namespace {

void readBertConfig(const ConfigFields& f, ModelConfig&) {
  const std::string kind = f.text(f.root(), "position_embedding_type", "position_embedding_type", "absolute");
  if (kind != "absolute") f.fail("position_embedding_type", "is \"" + kind + "\" but attnscope supports \"absolute\"");
}

}  // namespace

const Family& family_bert() {
  static const Family family = {
      "bert", Norm::LayerNorm, "layer_norm_eps", Positions::Learned, /*causal*/ false, Mlp::Plain,
      Residual::PostNorm, /*embed_scale_sqrt_d*/ false, /*tied_default*/ true, /*conv1d*/ false, FusedQkv::None,
      /*qkv, o, mlp, norm biases*/ true, true, true, true, "gelu",
      {"bert.",
       {{Role::Embed, "embeddings.word_embeddings"},
        {Role::Positions, "embeddings.position_embeddings"},
        {Role::TokenTypes, "embeddings.token_type_embeddings"},
        {Role::EmbedNorm, "embeddings.LayerNorm"},
        {Role::AttnNorm, "encoder.layer.{i}.attention.output.LayerNorm"},
        {Role::Q, "encoder.layer.{i}.attention.self.query"},
        {Role::K, "encoder.layer.{i}.attention.self.key"},
        {Role::V, "encoder.layer.{i}.attention.self.value"},
        {Role::O, "encoder.layer.{i}.attention.output.dense"},
        {Role::MlpNorm, "encoder.layer.{i}.output.LayerNorm"},
        {Role::Up, "encoder.layer.{i}.intermediate.dense"},
        {Role::Down, "encoder.layer.{i}.output.dense"},
        {Role::LmHead, "cls.predictions.decoder"},
        {Role::MlmTransform, "cls.predictions.transform.dense"},
        {Role::MlmNorm, "cls.predictions.transform.LayerNorm"},
        {Role::MlmBias, "cls.predictions.bias"}}},
      {readBertConfig, nullptr}};
  return family;
}

}  // namespace attnscope
