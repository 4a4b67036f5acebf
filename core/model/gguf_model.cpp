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

// What llama.cpp's converter did to an architecture's tensors.
struct Arch {
  const char* name;          // general.architecture
  const char* model_type;    // the family it is
  bool permuted_qk;          // Q and K rows reordered for llama.cpp's interleaved RoPE (convert_hf_to_gguf's permute)
  bool norms_plus_one;       // norm weights stored as 1 + w (Gemma): run as a plain RMSNorm on the stored values
  bool even_layers_slide;    // {arch}.attention.sliding_window applies to the even layers (Gemma 2)
};
constexpr Arch kArchs[] = {
    {"llama", "llama", true, false, false},   {"qwen2", "qwen2", false, false, false},
    {"qwen3", "qwen3", false, false, false},  {"gpt2", "gpt2", false, false, false},
    {"gemma2", "gemma2", false, true, true},
};

std::string archNames() {
  std::string out;
  for (const Arch& a : kArchs) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

const Family& familyOf(const Arch& arch) {
  for (const Family* f : families())
    if (std::string(f->model_type) == arch.model_type) {
      if (!arch.norms_plus_one) return *f;
      static const Family plain = [f] {  // Gemma's (1 + w) is already in the stored weights
        Family copy = *f;
        copy.norm = Norm::RmsNorm;
        return copy;
      }();
      return plain;
    }
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
  } else if (c.rope_type != "none") {
    f.fail("metadata key " + key(a, "rope.scaling.type") + " is \"" + c.rope_type +
           "\" but attnscope reads \"none\" and \"linear\"");
  }
  if (const GgufTensorInfo* t = f.tensor("rope_freqs.weight")) {  // Llama 3's scaling as per-frequency divisors
    const Tensor factors = GgufPlan(f).vector(t->name, dims / 2, "rope.dimension_count / 2");
    for (int64_t i = 0; i < dims / 2; ++i) c.rope_inv_freq[i] /= factors.data[i];
    c.rope_type = "llama3";
  }
  c.rotary.assign(c.n_layers, 1);
}

ModelConfig readConfig(const GgufFile& f, const Arch& a) {
  ModelConfig c;
  c.family = &familyOf(a);
  c.model_type = c.family->model_type;
  c.config_path = f.path();
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
  c.attn_scale = f.real(key(a, "attention.scale"), 1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  if (f.find(key(a, "attn_logit_softcapping"))) c.attn_softcap = f.real(key(a, "attn_logit_softcapping"));
  if (f.find(key(a, "final_logit_softcapping"))) c.final_softcap = f.real(key(a, "final_logit_softcapping"));
  c.window.assign(c.n_layers, -1);
  if (a.even_layers_slide && f.find(key(a, "attention.sliding_window"))) {
    const int64_t w = positive(f, key(a, "attention.sliding_window"), f.integer(key(a, "attention.sliding_window")), kMost);
    for (int64_t i = 0; i < c.n_layers; i += 2) c.window[i] = w - 1;
  }
  return c;
}

void readLayer(const GgufPlan& plan, const Arch& a, const ModelConfig& c, int64_t i, LayerWeights& l) {
  const std::string blk = "blk." + std::to_string(i) + ".", why = "layer " + std::to_string(i) + " of " + key(a, "block_count");
  const int64_t D = c.hidden, Hd = c.heads * c.head_dim, Gd = c.kv_heads * c.head_dim, M = c.mlp_dim;
  const bool nb = c.family->norm_bias;
  l.attn_norm = plan.norm(blk + "attn_norm", D, nb, why);
  if (c.family->fused_qkv != FusedQkv::None) {  // GPT-2: [3D, D] rows q, k, v (the converter transposed Conv1D)
    const Linear qkv = plan.linear(blk + "attn_qkv", 3 * D, D, why);
    Linear* parts[] = {&l.q, &l.k, &l.v};
    for (int p = 0; p < 3; ++p) {
      parts[p]->weight = qkv.weight;
      parts[p]->weight.shape = {D, D};
      parts[p]->weight.quant.data += p * D * qkv.weight.quant.row_bytes;
      if (!qkv.bias.empty()) parts[p]->bias = rows(qkv.bias, p * D, D);
    }
  } else {
    l.q = plan.linear(blk + "attn_q", Hd, D, why, a.permuted_qk ? unpermuteRows(c.heads, c.head_dim) : std::vector<int64_t>{});
    l.k = plan.linear(blk + "attn_k", Gd, D, why, a.permuted_qk ? unpermuteRows(c.kv_heads, c.head_dim) : std::vector<int64_t>{});
    l.v = plan.linear(blk + "attn_v", Gd, D, why);
  }
  if (c.family->names.has(Role::QNorm)) l.q_norm = plan.norm(blk + "attn_q_norm", c.head_dim, false, why);
  if (c.family->names.has(Role::KNorm)) l.k_norm = plan.norm(blk + "attn_k_norm", c.head_dim, false, why);
  l.o = plan.linear(blk + "attn_output", D, Hd, why);
  if (c.family->names.has(Role::PostAttnNorm)) l.post_attn_norm = plan.norm(blk + "post_attention_norm", D, nb, why);
  l.mlp_norm = plan.norm(blk + "ffn_norm", D, nb, why);
  if (c.family->names.has(Role::PostMlpNorm)) l.post_mlp_norm = plan.norm(blk + "post_ffw_norm", D, nb, why);
  if (c.family->mlp == Mlp::Gated) l.gate = plan.linear(blk + "ffn_gate", M, D, why);
  l.up = plan.linear(blk + "ffn_up", M, D, why);
  l.down = plan.linear(blk + "ffn_down", D, M, why);
}

// The bytes the weights take once touched: every tensor's blocks (mapped) and the float32
// copies of the vectors.
uint64_t weightBytes(const GgufHeader& h) {
  uint64_t bytes = 0;
  for (const GgufTensorInfo& t : h.tensors) bytes += t.dims.size() == 1 ? static_cast<uint64_t>(t.dims[0]) * 4 : t.bytes;
  return bytes;
}

Model readGguf(const std::string& path, bool read, bool with_tokenizer) {
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
  m.head_tied = c.tied;
  if (!c.tied) m.lm_head = plan.matrix("output.weight", c.vocab, c.hidden, "the unembedding [vocab, embedding_length]");
  const std::string q_bias = c.family->fused_qkv != FusedQkv::None ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias";
  c.qkv_bias = plan.has(q_bias);
  c.o_bias = plan.has("blk.0.attn_output.bias");
  c.mlp_bias = plan.has("blk.0.ffn_up.bias");
  if (!read) return m;
  if (c.family->positions == Positions::Learned)
    m.positions = file.readTensor(plan.tensor("position_embd.weight", {c.max_positions, c.hidden}, key(arch, "context_length")));
  m.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) readLayer(plan, arch, c, i, m.layers[i]);
  m.final_norm = plan.norm("output_norm", c.hidden, c.family->norm_bias, "the final norm");
  if (with_tokenizer) m.tokenizer = ggufTokenizer(file);
  const std::string name = file.string("general.name", fs::path(path).stem().string());
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

Model loadGgufModel(const std::string& path, bool with_tokenizer) { return readGguf(path, true, with_tokenizer); }

void checkGgufModel(const std::string& path) { readGguf(path, false, false); }

}  // namespace attnscope
