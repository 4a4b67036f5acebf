// GGUF files (docs/models.md, "GGUF files"): llama.cpp's model format read into the one model
// runtime. general.architecture names the family; the hyperparameters come from the
// {arch}.* keys; matrices stay as the file stores them (mapped ggml blocks, dequantized inside
// the row GEMM's panels), norms, biases and positions are read as float32.
#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "model/gguf_model.h"
#include "model/gguf_tokenizer.h"
#include "tensor/gguf.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// The RoPE of the sliding layers: the model's, or their own base ({arch}.rope.freq_base_swa,
// else the default named here), unscaled, as llama.cpp's get_rope_freq_base / _scale.
enum class SwaRope { Same, OwnBase10000, OwnBaseGlobal };

// What llama.cpp's converter did to an architecture's tensors, and what llama.cpp's
// src/models/<arch>.cpp decides itself.
struct Arch {
  const char* name;          // general.architecture
  const char* model_type;    // the family it is
  bool permuted_qk;          // Q and K rows reordered for llama.cpp's interleaved RoPE (convert_hf_to_gguf's permute)
  bool norms_plus_one;       // norm weights stored as 1 + w (Gemma): run as a plain RMSNorm on the stored values
  // 0: no layer slides, whatever the file says (llama.cpp ignores the window). n: with
  // {arch}.attention.sliding_window, layer i slides where {arch}.attention.sliding_window_pattern
  // says (a bool per layer, or its own n), else where i % n < n - 1 (llama.cpp's set_swa_pattern).
  int swa_pattern;
  SwaRope swa_rope;
  int nope_every;            // 0, or layer i has no RoPE where (i + 1) % n == 0 (SmolLM3, hard-coded by llama.cpp)
  // 0, or a model of this many layers scales its queries by 1/sqrt(embedding_length / head_count)
  // instead of 1/sqrt(key_length) unless the file gives attention.scale (Gemma 3 27B, whose
  // query_pre_attn_scalar is hidden / heads: llama.cpp's src/models/gemma3.cpp decides it by
  // its 62 layers, and its converter writes no scale).
  int width_scale_layers = 0;
  // The layer norms' tensor names (a post-norm encoder's are after each sublayer).
  const char* attn_norm = "attn_norm";
  const char* mlp_norm = "ffn_norm";
};
constexpr Arch kArchs[] = {
    {"llama", "llama", true, false, 0, SwaRope::Same, 0},
    {"qwen2", "qwen2", false, false, 0, SwaRope::Same, 0},
    {"qwen3", "qwen3", false, false, 0, SwaRope::Same, 0},
    {"gpt2", "gpt2", false, false, 0, SwaRope::Same, 0},
    {"gemma2", "gemma2", false, true, 2, SwaRope::Same, 0},
    {"bert", "bert", false, false, 0, SwaRope::Same, 0, 0, "attn_output_norm", "layer_output_norm"},
    {"phi3", "phi3", false, false, 0, SwaRope::Same, 0},  // llama.cpp turns Phi-3's window off
    {"gemma3", "gemma3_text", false, true, 6, SwaRope::OwnBase10000, 0, 62},
    {"olmo2", "olmo2", false, false, 4, SwaRope::OwnBaseGlobal, 0},
    {"smollm3", "smollm3", true, false, 0, SwaRope::Same, 4},
};

std::string archNames() {
  std::string out;
  for (const Arch& a : kArchs) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

const Family& familyOf(const Arch& arch) {
  // Gemma's (1 + w) is already in the stored weights: its families with a plain RMSNorm.
  static const std::map<std::string, Family> plain = [] {
    std::map<std::string, Family> out;
    for (const Family* f : families()) {
      Family copy = *f;
      copy.norm = Norm::RmsNorm;
      out.emplace(f->model_type, copy);
    }
    return out;
  }();
  for (const Family* f : families())
    if (std::string(f->model_type) == arch.model_type) return arch.norms_plus_one ? plain.at(f->model_type) : *f;
  throw std::logic_error("gguf: no family " + std::string(arch.model_type));
}

const Arch& archOf(const GgufFile& file) {
  const std::string& name = file.string("general.architecture");
  for (const Arch& a : kArchs)
    if (name == a.name) return a;
  file.fail("general.architecture is \"" + name + "\" but attnscope reads " + archNames());
}

// The tensors a model reads, checked against the hyperparameters before anything is read.
class GgufPlan {
 public:
  explicit GgufPlan(const GgufFile& file) : file_(file) {}
  bool has(const std::string& name) const { return file_.tensor(name) != nullptr; }
  const GgufFile& file() const { return file_; }
  // A tensor of shape `shape` (outermost first), readable.
  const GgufTensorInfo& tensor(const std::string& name, const Shape& shape, const std::string& why) const {
    const GgufTensorInfo* t = file_.tensor(name);
    if (!t) file_.fail("tensor " + name + " is missing (" + why + ")");
    const Shape stored(t->dims.rbegin(), t->dims.rend());
    if (stored != shape)
      file_.fail("tensor " + name + " has shape " + shapeToString(stored) + " but " + why + " implies " +
                 shapeToString(shape));
    file_.requireReadable(*t);
    return *t;
  }
  Weights matrix(const std::string& name, int64_t N, int64_t K, const std::string& why,
                 std::vector<int64_t> row_map = {}) const {
    const GgufTensorInfo& t = tensor(name, {N, K}, why);
    return quantizedWeights(*t.type, file_.data(t), N, K, file_.mapping(), std::move(row_map));
  }
  Tensor vector(const std::string& name, int64_t n, const std::string& why) const {
    return file_.readTensor(tensor(name, {n}, why));
  }
  NormWeights norm(const std::string& name, int64_t n, bool bias, const std::string& why) const {
    NormWeights w;
    w.weight = vector(name + ".weight", n, why);
    if (bias) w.bias = vector(name + ".bias", n, why);
    return w;
  }
  Linear linear(const std::string& name, int64_t N, int64_t K, const std::string& why,
                std::vector<int64_t> row_map = {}) const {
    Linear l;
    l.weight = matrix(name + ".weight", N, K, why, row_map);
    if (has(name + ".bias")) {
      l.bias = vector(name + ".bias", N, why);
      if (!row_map.empty()) {
        const Tensor stored = l.bias;
        for (int64_t n = 0; n < N; ++n) l.bias.data[n] = stored.data[row_map[n]];
      }
    }
    return l;
  }

 private:
  const GgufFile& file_;
};

// Hugging Face row r = h d + j d/2 + i of a head's q or k is stored at h d + 2 i + j.
std::vector<int64_t> unpermuteRows(int64_t heads, int64_t d) {
  std::vector<int64_t> map(heads * d);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < d / 2; ++i) map[h * d + j * (d / 2) + i] = h * d + 2 * i + j;
  return map;
}

std::string key(const Arch& a, const char* suffix) { return std::string(a.name) + "." + suffix; }

int64_t positive(const GgufFile& f, const std::string& k, int64_t value, int64_t most) {
  if (value < 1 || value > most) f.fail("metadata key " + k + " is " + std::to_string(value) + " (1 to " + std::to_string(most) + ")");
  return value;
}

// Phi-3's longrope (its converter writes no rope.scaling.type; llama.cpp goes by the factor
// tensors): the frequencies divided by rope_factors_short within
// rope.scaling.original_context_length and by rope_factors_long past it, cos and sin times
// rope.scaling.attn_factor. llama.cpp picks the set by its context size; attnscope by the
// text's length, as for the folder (RopeParams::longAt), so a file's maps are its folder's.
void readLongRope(const GgufFile& f, const Arch& a, int64_t dims, ModelConfig& c) {
  GgufPlan plan(f);
  const std::string what = "rope.dimension_count / 2 (longrope)";
  const Tensor shorts = plan.vector("rope_factors_short.weight", dims / 2, what);
  const Tensor longs = plan.vector("rope_factors_long.weight", dims / 2, what);
  c.rope_long_inv_freq = c.rope_inv_freq;
  for (int64_t i = 0; i < dims / 2; ++i) c.rope_inv_freq[i] /= shorts.data[i], c.rope_long_inv_freq[i] /= longs.data[i];
  c.rope_type = "longrope";
  c.rope_attention_factor = f.real(key(a, "rope.scaling.attn_factor"), 1.0);
  const int64_t context = f.integer(key(a, "rope.scaling.original_context_length"), c.max_positions);
  c.rope_original_context = context >= 1 && context < c.max_positions ? context : c.max_positions;
}

void readRopeKeys(const GgufFile& f, const Arch& a, ModelConfig& c) {
  c.rope_theta = f.real(key(a, "rope.freq_base"), 10000.0);
  const int64_t dims = f.integer(key(a, "rope.dimension_count"), c.head_dim);
  if (dims < 2 || dims % 2 != 0 || dims > c.head_dim)
    f.fail("metadata key " + key(a, "rope.dimension_count") + " is " + std::to_string(dims) +
           " (an even number from 2 to the head size " + std::to_string(c.head_dim) + ")");
  c.rope_inv_freq = ropeDefaultInvFreq(c.rope_theta, dims);
  c.rope_type = f.string(key(a, "rope.scaling.type"), "none");
  if (c.rope_type == "linear") {
    const double factor = f.real(key(a, "rope.scaling.factor"));
    if (!(factor > 0.0)) f.fail("metadata key " + key(a, "rope.scaling.factor") + " must be positive");
    for (double& x : c.rope_inv_freq) x /= factor;
  } else if (c.rope_type != "none" && c.rope_type != "longrope") {
    f.fail("metadata key " + key(a, "rope.scaling.type") + " is \"" + c.rope_type +
           "\" but attnscope reads \"none\", \"linear\" and \"longrope\"");
  }
  if (const GgufTensorInfo* t = f.tensor("rope_freqs.weight")) {  // Llama 3's scaling as per-frequency divisors
    const Tensor factors = GgufPlan(f).vector(t->name, dims / 2, "rope.dimension_count / 2");
    for (int64_t i = 0; i < dims / 2; ++i) c.rope_inv_freq[i] /= factors.data[i];
    c.rope_type = "llama3";
  }
  if (f.tensor("rope_factors_short.weight")) readLongRope(f, a, dims, c);  // whatever rope.scaling.type says, as llama.cpp
  c.rotary.assign(c.n_layers, 1);
}

// Which layers slide (Arch::swa_pattern) and, where the architecture says, their own RoPE.
void readWindows(const GgufFile& f, const Arch& a, ModelConfig& c) {
  c.window.assign(c.n_layers, -1);
  const std::string window_key = key(a, "attention.sliding_window"), pattern_key = key(a, "attention.sliding_window_pattern");
  if (a.swa_pattern == 0 || f.integer(window_key, 0) <= 0) return;
  const int64_t w = positive(f, window_key, f.integer(window_key), int64_t{1} << 20);
  std::vector<bool> slides(c.n_layers);
  const GgufValue* pattern = f.find(pattern_key);
  if (pattern && pattern->type == GgufType::Array) {
    const auto& items = f.array(pattern_key, GgufType::Bool).items;
    if (static_cast<int64_t>(items.size()) != c.n_layers) f.fail("metadata key " + pattern_key + " has " + std::to_string(items.size()) + " entries for " + std::to_string(c.n_layers) + " layers");
    for (int64_t i = 0; i < c.n_layers; ++i) slides[i] = items[i].u != 0;
  } else {
    const int64_t n = f.integer(pattern_key, a.swa_pattern);
    if (n < 0) f.fail("metadata key " + pattern_key + " is " + std::to_string(n) + " (0 or more)");
    for (int64_t i = 0; i < c.n_layers; ++i) slides[i] = n == 0 || i % n < n - 1;
  }
  const bool own_rope = a.swa_rope != SwaRope::Same && c.family->positions == Positions::Rope;
  const double base = f.real(key(a, "rope.freq_base_swa"), a.swa_rope == SwaRope::OwnBase10000 ? 10000.0 : c.rope_theta);
  const RopeParams local{base, "default", ropeDefaultInvFreq(base, 2 * static_cast<int64_t>(c.rope_inv_freq.size())), 1.0, 0, {}};
  const RopeParams global = ropeOf(c, 0);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    if (slides[i]) c.window[i] = w - 1;
    if (own_rope) c.layer_rope.push_back(slides[i] ? local : global);
  }
}

ModelConfig readConfig(const GgufFile& f, const Arch& a) {
  ModelConfig c;
  c.family = &familyOf(a);
  c.model_type = c.family->model_type;
  c.config_path = f.path();
  if (f.find("tokenizer.ggml.eos_token_id")) c.eos_ids = {f.integer("tokenizer.ggml.eos_token_id")};
  const Family& fam = *c.family;
  constexpr int64_t kMost = int64_t{1} << 20;
  c.n_layers = positive(f, key(a, "block_count"), f.integer(key(a, "block_count")), 4096);
  c.hidden = positive(f, key(a, "embedding_length"), f.integer(key(a, "embedding_length")), kMost);
  c.heads = positive(f, key(a, "attention.head_count"), f.integer(key(a, "attention.head_count")), 4096);
  c.kv_heads = positive(f, key(a, "attention.head_count_kv"), f.integer(key(a, "attention.head_count_kv"), c.heads), c.heads);
  if (c.heads % c.kv_heads != 0) f.fail("metadata key " + key(a, "attention.head_count_kv") + " does not divide the head count");
  c.head_dim = positive(f, key(a, "attention.key_length"), f.integer(key(a, "attention.key_length"), c.hidden / c.heads), kMost);
  if (f.integer(key(a, "attention.value_length"), c.head_dim) != c.head_dim)
    f.fail("metadata key " + key(a, "attention.value_length") + " differs from the key length (attnscope reads equal ones)");
  c.mlp_dim = positive(f, key(a, "feed_forward_length"), f.integer(key(a, "feed_forward_length")), kMost * 8);
  c.max_positions = positive(f, key(a, "context_length"), f.integer(key(a, "context_length")), kMost);
  c.context_key = key(a, "context_length");
  c.norm_eps = f.real(key(a, fam.norm == Norm::LayerNorm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"));
  c.activation = *activationNamed(fam.default_activation);
  if (fam.positions == Positions::Rope) readRopeKeys(f, a, c);
  if (c.rotary.empty()) c.rotary.assign(c.n_layers, 0);
  const int64_t scale_width = a.width_scale_layers == c.n_layers ? c.hidden / c.heads : c.head_dim;
  c.attn_scale = f.real(key(a, "attention.scale"), 1.0 / std::sqrt(static_cast<double>(scale_width)));
  if (f.find(key(a, "attn_logit_softcapping"))) c.attn_softcap = f.real(key(a, "attn_logit_softcapping"));
  if (f.find(key(a, "final_logit_softcapping"))) c.final_softcap = f.real(key(a, "final_logit_softcapping"));
  readWindows(f, a, c);
  if (a.nope_every > 0)
    for (int64_t i = 0; i < c.n_layers; ++i) c.rotary[i] = (i + 1) % a.nope_every != 0;
  return c;
}

// Rows [first, first + n) of a fused matrix (and its bias): a view into the same blocks.
Linear rowsOf(const Linear& fused, int64_t first, int64_t n) {
  Linear part;
  part.weight = fused.weight;
  part.weight.shape = {n, fused.weight.shape[1]};
  part.weight.quant.data += first * fused.weight.quant.row_bytes;
  if (!fused.bias.empty()) part.bias = rows(fused.bias, first, n);
  return part;
}

void readAttention(const GgufPlan& plan, const Arch& a, const ModelConfig& c, const std::string& blk, const std::string& why,
                   LayerWeights& l) {
  const int64_t D = c.hidden, Hd = c.heads * c.head_dim, Gd = c.kv_heads * c.head_dim;
  const TensorNames& names = c.family->names;
  if (c.family->fused_qkv != FusedQkv::None) {  // attn_qkv [Hd + 2 Gd, D]: rows q, k, v (GPT-2's Conv1D transposed)
    const Linear qkv = plan.linear(blk + "attn_qkv", Hd + 2 * Gd, D, why);
    l.q = rowsOf(qkv, 0, Hd);
    l.k = rowsOf(qkv, Hd, Gd);
    l.v = rowsOf(qkv, Hd + Gd, Gd);
  } else {
    l.q = plan.linear(blk + "attn_q", Hd, D, why, a.permuted_qk ? unpermuteRows(c.heads, c.head_dim) : std::vector<int64_t>{});
    l.k = plan.linear(blk + "attn_k", Gd, D, why, a.permuted_qk ? unpermuteRows(c.kv_heads, c.head_dim) : std::vector<int64_t>{});
    l.v = plan.linear(blk + "attn_v", Gd, D, why);
  }
  // q / k norms: per head [head_dim] (Qwen 3, Gemma 3) or over the whole projection (OLMo 2)
  if (names.has(Role::QNorm) || names.has(Role::QProjNorm))
    l.q_norm = plan.norm(blk + "attn_q_norm", names.has(Role::QNorm) ? c.head_dim : Hd, false, why);
  if (names.has(Role::KNorm) || names.has(Role::KProjNorm))
    l.k_norm = plan.norm(blk + "attn_k_norm", names.has(Role::KNorm) ? c.head_dim : Gd, false, why);
  l.o = plan.linear(blk + "attn_output", D, Hd, why);
}

void readLayer(const GgufPlan& plan, const Arch& a, const ModelConfig& c, int64_t i, LayerWeights& l) {
  const std::string blk = "blk." + std::to_string(i) + ".", why = "layer " + std::to_string(i) + " of " + key(a, "block_count");
  const int64_t D = c.hidden, M = c.mlp_dim;
  const bool nb = c.family->norm_bias;
  const TensorNames& names = c.family->names;
  if (names.has(Role::AttnNorm)) l.attn_norm = plan.norm(blk + a.attn_norm, D, nb, why);
  readAttention(plan, a, c, blk, why, l);
  if (names.has(Role::PostAttnNorm)) l.post_attn_norm = plan.norm(blk + "post_attention_norm", D, nb, why);
  if (names.has(Role::MlpNorm)) l.mlp_norm = plan.norm(blk + a.mlp_norm, D, nb, why);
  if (names.has(Role::PostMlpNorm)) l.post_mlp_norm = plan.norm(blk + "post_ffw_norm", D, nb, why);
  if (names.has(Role::GateUp)) {  // Phi-3: ffn_up [2M, D], gate rows first
    const Linear gate_up = plan.linear(blk + "ffn_up", 2 * M, D, why);
    l.gate = rowsOf(gate_up, 0, M);
    l.up = rowsOf(gate_up, M, M);
  } else {
    if (c.family->mlp == Mlp::Gated) l.gate = plan.linear(blk + "ffn_gate", M, D, why);
    l.up = plan.linear(blk + "ffn_up", M, D, why);
  }
  l.down = plan.linear(blk + "ffn_down", D, M, why);
}

// BERT's token type 0 row and its embedding LayerNorm, where the family has them.
void readEmbeddingExtras(const GgufPlan& plan, const ModelConfig& c, Model& m) {
  const int64_t D = c.hidden;
  if (c.family->names.has(Role::TokenTypes)) {
    const GgufTensorInfo* t = plan.file().tensor("token_types.weight");
    const int64_t types = t && t->dims.size() == 2 ? t->dims[1] : 1;  // tokenizer.ggml.token_type_count rows
    const Tensor all = plan.file().readTensor(plan.tensor("token_types.weight", {types, D}, "the token types [count, embedding_length]"));
    m.token_type = rows(all, 0, 1);
    m.token_type.shape = {D};
  }
  if (c.family->names.has(Role::EmbedNorm)) m.embed_norm = plan.norm("token_embd_norm", D, c.family->norm_bias, "the embedding norm");
}

// The bytes the weights take once touched: every tensor's blocks (mapped) and the float32
// copies of the vectors.
uint64_t weightBytes(const GgufHeader& h) {
  uint64_t bytes = 0;
  for (const GgufTensorInfo& t : h.tensors) bytes += t.dims.size() == 1 ? static_cast<uint64_t>(t.dims[0]) * 4 : t.bytes;
  return bytes;
}

Model readGguf(const std::string& path, bool read, bool with_tokenizer, const std::string& shown_name = "") {
  const GgufFile file(path);
  const Arch& arch = archOf(file);
  Model m;
  m.folder = path;
  m.config = readConfig(file, arch);
  ModelConfig& c = m.config;
  checkMemory(weightBytes(file.header()), path + ": the weights in memory (" + std::to_string(weightBytes(file.header()) >> 20) + " MiB)");
  const GgufPlan plan(file);
  const GgufTensorInfo* embed = file.tensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) file.fail("tensor token_embd.weight is missing (the token embedding [vocab, embedding_length])");
  c.vocab = embed->dims[1];
  m.embed = plan.matrix("token_embd.weight", c.vocab, c.hidden, "the token embedding [vocab, " + key(arch, "embedding_length") + "]");
  c.tied = !plan.has("output.weight");
  // llama.cpp's converter drops BERT's masked-LM head: an encoder without head (maps, no logits).
  const bool encoder_without_head = c.family->names.has(Role::MlmTransform);
  m.head_tied = c.tied && !encoder_without_head;
  if (!c.tied) m.lm_head = plan.matrix("output.weight", c.vocab, c.hidden, "the unembedding [vocab, embedding_length]");
  const std::string q_bias = c.family->fused_qkv != FusedQkv::None ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias";  // llama.cpp's names
  c.qkv_bias = plan.has(q_bias);
  c.o_bias = plan.has("blk.0.attn_output.bias");
  c.mlp_bias = plan.has("blk.0.ffn_up.bias");
  if (!read) return m;
  if (c.family->positions == Positions::Learned)
    m.positions = file.readTensor(plan.tensor("position_embd.weight", {c.max_positions, c.hidden}, key(arch, "context_length")));
  readEmbeddingExtras(plan, c, m);
  m.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) readLayer(plan, arch, c, i, m.layers[i]);
  if (c.family->names.has(Role::FinalNorm)) m.final_norm = plan.norm("output_norm", c.hidden, c.family->norm_bias, "the final norm");
  if (with_tokenizer) m.tokenizer = ggufTokenizer(file);
  const std::string name = !shown_name.empty() ? shown_name : file.string("general.name", fs::path(path).stem().string());
  m.display_name = name;
  m.caption = "GGUF " + std::string(arch.name) + " model " + name + " (" + quantizationMix(file.header()) + ")";
  return m;
}

}  // namespace

std::string quantizationMix(const GgufHeader& h) {
  std::map<std::string, uint64_t> by_type;
  uint64_t total = 0;
  for (const GgufTensorInfo& t : h.tensors) {
    by_type[t.type->name] += t.bytes;
    total += t.bytes;
  }
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [name, bytes] : by_type) order.emplace_back(bytes, name);
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out;
  for (const auto& [bytes, name] : order) {
    const long percent = total ? std::lround(100.0 * static_cast<double>(bytes) / static_cast<double>(total)) : 0;
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(percent) + "%";
  }
  return out;
}

bool isGgufFile(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::is_regular_file(p, ec)) return false;
  if (p.extension() == ".gguf") return true;
  // Ollama keeps a model as blobs/sha256-<hex>, no extension: told by its magic (4 bytes read).
  if (p.filename().string().rfind("sha256-", 0) != 0) return false;
  char magic[4] = {};
  std::ifstream in(p, std::ios::binary);
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

Model loadGgufModel(const std::string& path, bool with_tokenizer, const std::string& name) {
  return readGguf(path, true, with_tokenizer, name);
}

void checkGgufModel(const std::string& path) { readGguf(path, false, false); }

}  // namespace attnscope
