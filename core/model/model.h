// Trained decoder-only transformers in the attnscope-model/1 folder format (docs/models.md, "Model
// folders"): config.json, vocab.json, one .npy per tensor (float32 or float16), and an
// optional training.json whose "caption" describes the model.
//
// Sizes: V vocabulary, D d_model, M d_mlp, T max_len (context), N layers, H heads.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attention/attention.h"
#include "tensor/tensor.h"

namespace attnscope {

enum class Tokenizer { Chars, Bytes };
enum class Positional { Learned, Sinusoidal };
enum class Activation { Gelu, GeluTanh };

inline constexpr const char* kModelFormat = "attnscope-model/1";

struct ModelConfig {
  std::string name;
  std::string description;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t d_model = 0;
  int64_t d_mlp = 0;
  int64_t max_len = 0;
  int64_t vocab_size = 0;
  Tokenizer tokenizer = Tokenizer::Chars;
  int64_t unk_id = 0;
  Positional positional = Positional::Learned;
  Activation activation = Activation::Gelu;
  float ln_eps = 1e-5f;
  bool tied_embeddings = false;
  bool mlp = true;
};

// nn.Linear convention throughout: y = x W^T + b.
struct BlockWeights {
  Tensor ln1_weight, ln1_bias;   // [D]
  AttentionInputs attn;          // w_q, w_k, w_v, w_o [D, D]; b_q .. b_o [D] each, or empty = no bias
                                 // (the runners read them in place: no copy)
  Tensor ln2_weight, ln2_bias;   // [D]       (mlp only)
  Tensor w_in, b_in;             // [M, D], [M]
  Tensor w_out, b_out;           // [D, M], [D]
};

// A head training.json's "notable_heads" names: the best head for one pattern score.
struct NotableHead {
  std::string pattern;  // "previous_token", "induction", ...
  int64_t layer = 0, head = 0;
  double score = 0.0;
};

struct Model {
  std::string folder;
  ModelConfig config;
  std::vector<std::string> vocab;  // [V] vocab.json's entries (bytes without vocab.json: the byte itself)
  std::unordered_map<std::string, int64_t> char_ids;  // chars tokenizer: character -> id
  Tensor tok_emb;   // [V, D]
  Tensor pos_emb;   // [T, D]: learned, or the sinusoidal table of seed 003 computed at load
  std::vector<BlockWeights> blocks;  // [N]
  Tensor ln_f_weight, ln_f_bias;     // [D]
  Tensor lm_head;   // [V, D] (tok_emb's copy when tied_embeddings)
  std::string caption;  // training.json "caption", else config "description"
  std::vector<NotableHead> notable_heads;  // training.json "notable_heads", best score first; may be empty
};

// Reads and validates a model folder. Every problem is an InputError naming the file:
// "m/config.json: \"format\" is \"x\" but must be \"attnscope-model/1\"",
// "m/blocks.0.attn.w_q.npy: missing", "m/tok_emb.npy: shape [97, 64] but the config needs [97, 128]".
Model loadModel(const std::string& folder);

// Text -> token ids. chars: one token per UTF-8 character; bytes: one per byte.
// Characters outside the vocabulary get unk_id and are flagged unknown, as is a character
// that matches the unknown id's own entry (a vocabulary whose unknown entry is "\uFFFD").
struct ModelTokens {
  std::vector<int64_t> ids;          // [L]
  std::vector<std::string> text;     // [L] the input character (or byte) at each position
  std::vector<std::string> label;    // [L] the same as one printable line ("\\n", "\\xc3")
  std::vector<uint8_t> unknown;      // [L] 1 = not in the vocabulary, mapped to unk_id
  int64_t unknownCount() const;
};
ModelTokens tokenizeForModel(const Model& model, const std::string& text);

// Token `id` as one printable line: the character escaped (chars), or "a", "\\n", "\\xc3" (bytes).
std::string tokenLabel(const Model& model, int64_t id);

// A token's text as one printable line: "\n" -> "\\n", "\t" -> "\\t", other control bytes
// -> "\\xNN"; backslashes doubled.
std::string escapeToken(const std::string& text);

}  // namespace attnscope
