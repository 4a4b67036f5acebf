// Hugging Face model folders (docs/models.md, "Hugging Face model folders"): config.json
// (model_config.h), the weights of model.safetensors or its shards (tensor/safetensors.h)
// read by role as the family names them, and the tokenizer (tokenizer/).
#include "model/model.h"

#include <cmath>
#include <filesystem>

#include "attention/kernel.h"
#include "tensor/memory.h"
#include "tensor/safetensors.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// Which tensors to read, with the shapes config.json implies: checked against the headers
// first, read only when all are present and fit memory (matrices BF16 as stored, the rest float32).
class WeightPlan {
 public:
  WeightPlan(SafetensorsFolder& store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}

  std::string base(const std::string& name) const { return prefix_ + name; }
  bool has(const std::string& full) const { return store_.has(full); }
  // Adds a tensor read as float32 (dst) or as stored (matrix) of the base model (prefixed)
  // or, with head = true, one outside it.
  void add(const std::string& name, Shape shape, Tensor* dst, const std::string& why, bool head = false) {
    push(head ? name : base(name), std::move(shape), dst, nullptr, why);
  }
  // `panels`: kept in the row GEMM's panels (a matrix no load step reshapes).
  void add(const std::string& name, Shape shape, Weights* matrix, const std::string& why, bool head = false,
           bool panels = false) {
    const int64_t rows = shape.at(0), K = shape.at(1);
    push(head ? name : base(name), std::move(shape), nullptr, matrix, why, panels, panels ? panelPadding(rows) * K : 0);
  }
  // A norm: NAME.weight, and NAME.bias when the family's norms have one.
  // Old BERT checkpoints (TensorFlow-converted) name them NAME.gamma and NAME.beta.
  void norm(const std::string& name, int64_t D, bool bias, NormWeights& dst, const std::string& why,
            bool head = false) {
    const bool legacy = !has((head ? "" : prefix_) + name + ".weight") && has((head ? "" : prefix_) + name + ".gamma");
    add(name + (legacy ? ".gamma" : ".weight"), {D}, &dst.weight, why, head);
    if (bias) add(name + (legacy ? ".beta" : ".bias"), {D}, &dst.bias, why, head);
  }
  // A linear layer [out, in] (Conv1D checkpoints store it [in, out]), with its bias; in
  // panels when read as it is used (not transposed, not split: finishLayer packs those).
  // `parts`: the rows of each matrix a fused weight splits into (empty: not split).
  // A Conv1D weight is read straight into its parts' panels (`part_dst`, one per part; dst's
  // own weight when it is not split).
  void linear(const std::string& name, int64_t out, int64_t in, bool conv1d, bool bias, Linear& dst,
              const std::string& why, bool head = false, std::vector<int64_t> parts = {},
              std::vector<Weights*> part_dst = {}) {
    // Every linear map ends in panels (finishLayer packs what is not read into them); a fused
    // one split in its parts, each padded.
    if (parts.empty()) parts = {out};
    if (conv1d && part_dst.empty() && parts.size() == 1) part_dst = {&dst.weight};
    int64_t padding = 0;
    for (int64_t rows : parts) padding += panelPadding(rows);
    push(head ? name + ".weight" : base(name + ".weight"), conv1d ? Shape{in, out} : Shape{out, in}, nullptr,
         &dst.weight, why, !conv1d && parts.size() == 1, padding * in);
    if (conv1d) items_.back().columns = {std::move(part_dst), std::move(parts)};
    if (bias) add(name + ".bias", {out}, &dst.bias, why, head);
  }
  // What load() checks before reading anything: the memory rule, then the files' sizes.
  void check(const std::string& folder) const {
    checkMemoryRule(folder);
    store_.checkSizes();
  }
  // The memory rule first (from the headers alone), then the files' data: mapped, checked
  // against their sizes, read tensor by tensor with progress (bytes read).
  void load(const std::string& folder, const Progress& progress) {
    checkMemoryRule(folder);
    store_.mapData();
    uint64_t done = 0;
    if (progress && !progress(0.0)) throw Cancelled();
    for (const Item& item : items_) {
      if (!item.columns.dst.empty()) {
        std::vector<Weights> parts = store_.readColumnPanels(item.name, item.shape, item.why, item.columns.counts);
        for (size_t p = 0; p < parts.size(); ++p) *item.columns.dst[p] = std::move(parts[p]);
      } else if (item.matrix) {
        *item.matrix = store_.readWeights(item.name, item.shape, item.why, item.panels);
      } else {
        *item.dst = store_.read(item.name, item.shape, item.why);
      }
      done += item.bytes;
      if (progress && !progress(bytes_ > 0 ? static_cast<double>(done) / static_cast<double>(bytes_) : 1.0))
        throw Cancelled();
    }
  }

 private:
  // A Conv1D weight [in, out]: its column ranges (`counts`) and where each goes in panels.
  struct ColumnParts {
    std::vector<Weights*> dst;
    std::vector<int64_t> counts;
  };
  struct Item {
    std::string name;
    Shape shape;
    Tensor* dst;
    Weights* matrix;
    std::string why;
    bool panels;
    uint64_t bytes;  // in memory, with the panels' padding
    ColumnParts columns = {};
  };
  void checkMemoryRule(const std::string& folder) const {
    checkMemory(bytes_, folder + ": the weights in memory (" + std::to_string(bytes_ >> 20) + " MiB)");
  }
  // Rows a matrix of `rows` outputs gains in panels (whole 64-row blocks).
  static int64_t panelPadding(int64_t rows) { return panelCount(rows) * kPanelWidth - rows; }
  // padding: the elements the matrix gains in panels, in its storage type.
  void push(const std::string& full, Shape shape, Tensor* dst, Weights* matrix, const std::string& why,
            bool panels = false, int64_t padding = 0) {
    store_.checkShape(full, shape, why);
    const uint64_t stored = store_.residentBytes(full, matrix != nullptr);
    const uint64_t per_element = numel(shape) > 0 ? stored / static_cast<uint64_t>(numel(shape)) : 0;
    const uint64_t bytes = stored + static_cast<uint64_t>(padding) * per_element;
    items_.push_back({full, std::move(shape), dst, matrix, why, panels, bytes});
    bytes_ += bytes;
  }
  SafetensorsFolder& store_;
  std::string prefix_;
  std::vector<Item> items_;
  uint64_t bytes_ = 0;
};

// Rows [first, first + count) of a fused linear map (its bias too).
Linear rowsOfLinear(const Linear& fused, int64_t first, int64_t count) {
  return {rowsOf(fused.weight, first, count), fused.bias.empty() ? Tensor() : rows(fused.bias, first, count)};
}

// Splits a fused q/k/v weight [3D, D] (and bias [3D]) into q, k, v: GPT-2's thirds (columns
// of the Conv1D weight [D, 3D], straight into panels), GPT-NeoX's per-head [H, 3, d] rows or
// Phi-3's stacked q [H d], k [G d], v [G d] rows.
void splitFused(const ModelConfig& c, Linear fused, LayerWeights& layer) {
  const int64_t D = c.hidden, H = c.heads, d = c.head_dim;
  Linear* parts[] = {&layer.q, &layer.k, &layer.v};
  if (c.family->fused_qkv == FusedQkv::Stacked) {
    const int64_t Hd = H * d, Gd = c.kv_heads * d;
    layer.q = rowsOfLinear(fused, 0, Hd), layer.k = rowsOfLinear(fused, Hd, Gd), layer.v = rowsOfLinear(fused, Hd + Gd, Gd);
    return;
  }
  const bool bias = !fused.bias.empty();
  for (int p = 0; p < 3; ++p) {
    if (c.family->fused_qkv == FusedQkv::Conv1DThirds) {  // the weights were read into the parts
      if (bias) parts[p]->bias = rows(fused.bias, p * D, D);
      continue;
    }
    Weights& w = parts[p]->weight;
    w.shape = {D, D};
    for (int64_t h = 0; h < H; ++h) {
      const Weights head = rowsOf(fused.weight, (h * 3 + p) * d, d);
      w.f32.insert(w.f32.end(), head.f32.begin(), head.f32.end());
      w.bf16.insert(w.bf16.end(), head.bf16.begin(), head.bf16.end());
    }
    if (!bias) continue;
    parts[p]->bias = Tensor({D});
    for (int64_t h = 0; h < H; ++h) {
      const int64_t src = (h * 3 + p) * d;
      std::copy(fused.bias.data.begin() + src, fused.bias.data.begin() + src + d, parts[p]->bias.data.begin() + h * d);
    }
  }
}

struct LayerPlanned {
  Linear fused;    // filled for fused q/k/v families, split after loading
  Linear gate_up;  // filled for a fused gate/up (Role::GateUp), split after loading
};

void planLayer(const ModelConfig& c, int64_t i, WeightPlan& plan, LayerWeights& layer, LayerPlanned& p) {
  const Family& f = *c.family;
  auto name = [&](Role role) { return f.names.of(role, i); };
  const int64_t D = c.hidden, Hd = c.heads * c.head_dim, Gd = c.kv_heads * c.head_dim, M = c.mlp_dim;
  const std::string why = "layer " + std::to_string(i) + " of num_hidden_layers = " + std::to_string(c.n_layers);
  const bool nb = f.norm_bias;
  if (f.names.has(Role::AttnNorm)) plan.norm(name(Role::AttnNorm), D, nb, layer.attn_norm, why);
  if (f.names.has(Role::PostAttnNorm)) plan.norm(name(Role::PostAttnNorm), D, nb, layer.post_attn_norm, why);
  if (f.names.has(Role::MlpNorm)) plan.norm(name(Role::MlpNorm), D, nb, layer.mlp_norm, why);
  if (f.names.has(Role::PostMlpNorm)) plan.norm(name(Role::PostMlpNorm), D, nb, layer.post_mlp_norm, why);
  if (f.fused_qkv == FusedQkv::Stacked) {
    plan.linear(name(Role::Qkv), Hd + 2 * Gd, D, false, c.qkv_bias, p.fused, why, false, {Hd, Gd, Gd});
  } else if (f.fused_qkv == FusedQkv::Conv1DThirds) {
    plan.linear(name(Role::Qkv), 3 * D, D, true, c.qkv_bias, p.fused, why, false, {D, D, D},
                {&layer.q.weight, &layer.k.weight, &layer.v.weight});
  } else if (f.fused_qkv != FusedQkv::None) {
    plan.linear(name(Role::Qkv), 3 * D, D, f.conv1d, c.qkv_bias, p.fused, why, false, {D, D, D});
  } else {
    plan.linear(name(Role::Q), Hd, D, false, c.qkv_bias, layer.q, why);
    plan.linear(name(Role::K), Gd, D, false, c.qkv_bias, layer.k, why);
    plan.linear(name(Role::V), Gd, D, false, c.qkv_bias, layer.v, why);
  }
  if (f.names.has(Role::QNorm)) plan.norm(name(Role::QNorm), c.head_dim, false, layer.q_norm, why);
  if (f.names.has(Role::KNorm)) plan.norm(name(Role::KNorm), c.head_dim, false, layer.k_norm, why);
  if (f.names.has(Role::QProjNorm)) plan.norm(name(Role::QProjNorm), Hd, false, layer.q_norm, why);
  if (f.names.has(Role::KProjNorm)) plan.norm(name(Role::KProjNorm), Gd, false, layer.k_norm, why);
  plan.linear(name(Role::O), D, Hd, f.conv1d, c.o_bias, layer.o, why);
  if (f.names.has(Role::GateUp)) {
    plan.linear(name(Role::GateUp), 2 * M, D, false, c.mlp_bias, p.gate_up, why, false, {M, M});
  } else {
    if (f.mlp == Mlp::Gated) plan.linear(name(Role::Gate), M, D, false, c.mlp_bias, layer.gate, why);
    plan.linear(name(Role::Up), M, D, f.conv1d, c.mlp_bias, layer.up, why);
  }
  plan.linear(name(Role::Down), D, M, f.conv1d, c.mlp_bias, layer.down, why);
}

// Splits, then the row GEMM's panels of what was not read into them.
void finishLayer(const ModelConfig& c, LayerWeights& layer, LayerPlanned& p) {
  if (c.family->fused_qkv != FusedQkv::None) splitFused(c, std::move(p.fused), layer);
  if (!p.gate_up.weight.empty()) {  // gate rows first, then up
    layer.gate = rowsOfLinear(p.gate_up, 0, c.mlp_dim), layer.up = rowsOfLinear(p.gate_up, c.mlp_dim, c.mlp_dim);
    p.gate_up = Linear();
  }
  // The per-head q/k norms take the family's norm: (1 + w) kept as their scale, summed in
  // float32 as Gemma3RMSNorm does (1.0 + weight.float()).
  if (c.family->norm == Norm::RmsNormPlusOne)
    for (NormWeights* n : {&layer.q_norm, &layer.k_norm})
      for (float& w : n->weight.data) w += 1.0f;
  for (Linear* l : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
    if (!l->weight.empty() && !l->weight.panels) packPanels(l->weight);
}

// The base model's prefix: "model." etc. when the embedding is stored with it, "" when the
// checkpoint was saved from the base class.
std::string tensorPrefix(const ModelConfig& c, const SafetensorsFolder& store) {
  const std::string embed = c.family->names.of(Role::Embed) + ".weight", prefix = c.family->names.prefix();
  if (store.has(prefix + embed)) return prefix;
  if (store.has(embed)) return "";
  throw InputError(store.describe() + ": tensor \"" + prefix + embed + "\" (or \"" + embed +
                   "\") is missing (the token embedding [vocab_size, hidden_size])");
}

// Unembedding: lm_head (or tied to the embedding); BERT's masked-LM head when present.
void planHead(const ModelConfig& c, const SafetensorsFolder& store, WeightPlan& plan, Model& m) {
  const TensorNames& n = c.family->names;
  const int64_t D = c.hidden, V = c.vocab;
  if (n.has(Role::MlmTransform)) {
    if (!store.has(n.of(Role::MlmTransform) + ".weight")) return;  // an encoder without MLM head
    plan.linear(n.of(Role::MlmTransform), D, D, false, true, m.mlm_transform, "masked-LM head", true);
    plan.norm(n.of(Role::MlmNorm), D, true, m.mlm_norm, "masked-LM head", true);
    plan.add(n.of(Role::MlmBias), {V}, &m.lm_bias, "masked-LM head", true);
  }
  if (!c.tied) plan.add(n.of(Role::LmHead) + ".weight", {V, D}, &m.lm_head, "unembedding [vocab_size, hidden_size]; or tie_word_embeddings", true, true);
}

bool hasTokenizerFiles(const std::string& folder) {
  std::error_code ec;
  return fs::exists(fs::path(folder) / "tokenizer.json", ec) || fs::exists(fs::path(folder) / "vocab.json", ec);
}

}  // namespace

Projections LayerWeights::projections() const {
  auto bias = [](const Tensor& b) { return b.empty() ? nullptr : b.data.data(); };
  return {q.weight.rows(), k.weight.rows(), v.weight.rows(), o.weight.rows(),
          bias(q.bias), bias(k.bias), bias(v.bias), bias(o.bias)};
}

namespace {

// config.json, the weight files' headers and the plan of every tensor the family reads
// (shapes checked); with `read`, the weights read with progress, else only what reading
// checks first (memory, file sizes): the model then holds no weights.
Model readHfFolder(const std::string& folder, const Progress& progress, bool read) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw InputError(folder + ": not a model folder (no such directory)");
  Model m;
  m.folder = folder;
  m.config = readHfConfig(folder);
  const ModelConfig& c = m.config;
  const Family& f = *c.family;
  const TensorNames& n = f.names;
  SafetensorsFolder store = SafetensorsFolder::open(folder);
  m.tensor_prefix = tensorPrefix(c, store);
  WeightPlan plan(store, m.tensor_prefix);
  const int64_t D = c.hidden;
  // Tied, the embedding is the head too: in panels (a lookup reads a row across them).
  plan.add(n.of(Role::Embed) + ".weight", {c.vocab, D}, &m.embed, "token embedding [vocab_size, hidden_size]", false,
           c.tied);
  if (n.has(Role::Positions)) plan.add(n.of(Role::Positions) + ".weight", {c.max_positions, D}, &m.positions, "learned positions");
  Tensor token_types;
  if (n.has(Role::TokenTypes)) plan.add(n.of(Role::TokenTypes) + ".weight", {c.type_vocab, D}, &token_types, "token types");
  if (n.has(Role::EmbedNorm)) plan.norm(n.of(Role::EmbedNorm), D, f.norm_bias, m.embed_norm, "embedding LayerNorm");
  m.layers.resize(c.n_layers);
  std::vector<LayerPlanned> planned(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) planLayer(c, i, plan, m.layers[i], planned[i]);
  if (n.has(Role::FinalNorm)) plan.norm(n.of(Role::FinalNorm), D, f.norm_bias, m.final_norm, "final norm");
  planHead(c, store, plan, m);
  if (!read) {
    plan.check(folder);
    return m;
  }
  plan.load(folder, progress);
  for (int64_t i = 0; i < c.n_layers; ++i) finishLayer(c, m.layers[i], planned[i]);
  if (!token_types.empty()) {
    m.token_type = rows(token_types, 0, 1);
    m.token_type.shape = {D};
  }
  return m;
}

}  // namespace

Model loadHfFolder(const std::string& folder, bool with_tokenizer, const Progress& progress) {
  Model m = readHfFolder(folder, progress, true);
  const ModelConfig& c = m.config;
  const TensorNames& n = c.family->names;
  const bool encoder_without_head = n.has(Role::MlmTransform) && m.mlm_transform.weight.empty();
  m.head_tied = c.tied && !encoder_without_head;  // shared, not copied (a 1B model's is 1 GB in float32)
  if (with_tokenizer && hasTokenizerFiles(folder)) m.tokenizer = HfTokenizer::load(folder);
  m.caption = "Hugging Face " + c.model_type + " model (" + folder + ")";
  return m;
}

void checkHfFolder(const std::string& folder) { readHfFolder(folder, {}, false); }

}  // namespace attnscope
