// attnscope-model/1 folders (docs/models.md, "Model folders"): config.json, vocab.json, one
// .npy per tensor (float32 or float16), and an optional training.json whose "caption"
// describes the model, read into a Model of the attnscope-model/1 family.
#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "attention/positional_encoding.h"
#include "model/config_limits.h"
#include "tensor/memory.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"

namespace attnscope {

const Family& family_attnscope_model();  // families/attnscope_model.cpp

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kModelFormat = "attnscope-model/1";

constexpr size_t kMaxJsonBytes = size_t{64} << 20;   // config.json, vocab.json, training.json

json readJsonFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path + ": missing (a model folder needs config.json, vocab.json and the tensors)");
  const std::string text = readSmallFile(path, kMaxJsonBytes, "a model's JSON file");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e400
    std::string why = e.what();
    const size_t colon = why.find("]: ");  // drop nlohmann's "[json.exception.parse_error.101] "
    throw InputError(path + ": not valid JSON (" + (colon == std::string::npos ? why : why.substr(colon + 3)) + ")");
  }
}

// Reads config.json's fields one by one; every message names the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "must be a JSON object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw InputError(path_ + ": " + (key.empty() ? "" : "\"" + key + "\" ") + why);
  }
  const json& get(const std::string& key) const {
    if (!j_.contains(key)) fail(key, "is missing");
    return j_.at(key);
  }
  std::string text(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_string()) fail(key, "must be a string");
    return v.get<std::string>();
  }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const {
    const json& v = get(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail(key, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v.get<int64_t>();
  }
  bool boolean(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_boolean()) fail(key, "must be true or false");
    return v.get<bool>();
  }
  // One of the listed strings; returns its index.
  size_t choice(const std::string& key, const std::vector<std::string>& options) const {
    const std::string value = text(key);
    std::string list;
    for (size_t i = 0; i < options.size(); ++i) {
      if (options[i] == value) return i;
      list += (i ? ", \"" : "\"") + options[i] + "\"";
    }
    fail(key, "is \"" + value + "\" but must be one of " + list);
  }

 private:
  const json& j_;
  std::string path_;
};

// What config.json says beyond the sizes: the tokenizer, the positions, the MLP, ties.
struct OwnFormat {
  std::string name, description;
  CharVocab::Kind tokenizer = CharVocab::Kind::Chars;
  int64_t unk_id = 0;
  bool sinusoidal = false, mlp = true;
};

ModelConfig readConfig(const std::string& path, OwnFormat& own) {
  const json j = readJsonFile(path);
  const ConfigReader r(j, path);
  const std::string format = r.text("format");
  if (format != kModelFormat)
    r.fail("format", "is \"" + format + "\" but must be \"" + kModelFormat + "\"");
  ModelConfig c;
  c.family = &family_attnscope_model();
  c.model_type = kModelFormat;
  c.config_path = path;
  c.context_key = "max_len";
  own.name = r.text("name");
  own.description = r.text("description");
  c.n_layers = r.integer("n_layers", 1, kMaxLayers);
  c.hidden = r.integer("d_model", 1, kMaxDim);
  c.heads = c.kv_heads = r.integer("n_heads", 1, c.hidden);
  own.mlp = r.boolean("mlp");
  c.mlp_dim = r.integer("d_mlp", own.mlp ? 1 : 0, kMaxDim * 4);
  c.max_positions = r.integer("max_len", 1, kMaxDim);
  c.vocab = r.integer("vocab_size", 1, kMaxVocab);
  own.tokenizer = r.choice("tokenizer", {"chars", "bytes"}) == 0 ? CharVocab::Kind::Chars : CharVocab::Kind::Bytes;
  own.unk_id = r.integer("unk_id", 0, c.vocab - 1);
  own.sinusoidal = r.choice("positional", {"learned", "sinusoidal"}) == 1;
  c.activation = r.choice("activation", {"gelu", "gelu_tanh"}) == 0 ? Activation::GeluErf : Activation::GeluTanh;
  const json& eps = r.get("ln_eps");
  if (!eps.is_number() || !std::isfinite(eps.get<double>()) || eps.get<double>() <= 0.0 || eps.get<double>() > 1.0)
    r.fail("ln_eps", "must be a number in (0, 1]");
  c.norm_eps = static_cast<double>(eps.get<float>());  // float32, as the format's models were trained and checked
  c.tied = r.boolean("tied_embeddings");
  if (c.hidden % c.heads != 0)
    r.fail("n_heads", std::to_string(c.heads) + " does not divide d_model " + std::to_string(c.hidden));
  c.head_dim = c.hidden / c.heads;
  c.attn_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  c.window.assign(c.n_layers, -1);
  c.rotary.assign(c.n_layers, 0);  // learned or sinusoidal positions, added to the embedding
  return c;
}

class TensorReader {
 public:
  explicit TensorReader(const std::string& folder) : folder_(folder) {}

  std::string path(const std::string& name) const { return (fs::path(folder_) / (name + ".npy")).string(); }
  bool exists(const std::string& name) const { return fs::exists(path(name)); }

  Tensor required(const std::string& name, const Shape& shape, const std::string& why) const {
    if (!exists(name)) throw InputError(path(name) + ": missing (" + why + ")");
    return read(name, shape);
  }
  Tensor optional(const std::string& name, const Shape& shape) const {
    return exists(name) ? read(name, shape) : Tensor();
  }
  void forbidden(const std::string& name, const std::string& why) const {
    if (exists(name)) throw InputError(path(name) + ": present but " + why);
  }

 private:
  Tensor read(const std::string& name, const Shape& shape) const {
    Tensor t = readNpyFloat(path(name));
    if (t.shape != shape)
      throw InputError(path(name) + ": shape " + shapeToString(t.shape) + " but the config needs " +
                       shapeToString(shape));
    return t;
  }
  std::string folder_;
};

// training.json's caption (else the config's description) and its notable heads; entries
// that are not well-formed are skipped (the log is documentation, not part of the format).
void readTrainingLog(const std::string& folder, const std::string& fallback, Model& m) {
  m.caption = fallback;
  const std::string path = (fs::path(folder) / "training.json").string();
  if (!fs::exists(path)) return;
  const json j = readJsonFile(path);
  if (!j.is_object()) return;
  if (j.contains("caption") && j["caption"].is_string()) m.caption = j["caption"].get<std::string>();
  if (!j.contains("notable_heads") || !j["notable_heads"].is_object()) return;
  for (const auto& [pattern, h] : j["notable_heads"].items()) {
    if (!h.is_object() || !h.contains("layer") || !h["layer"].is_number_integer() || !h.contains("head") ||
        !h["head"].is_number_integer() || !h.contains("score") || !h["score"].is_number())
      continue;
    m.notable_heads.push_back({pattern, h["layer"].get<int64_t>(), h["head"].get<int64_t>(), h["score"].get<double>()});
  }
  std::stable_sort(m.notable_heads.begin(), m.notable_heads.end(),
                   [](const NotableHead& a, const NotableHead& b) { return a.score > b.score; });
}


// vocab.json's entries (a bytes vocabulary without one: the bytes, then "<id>").
std::vector<std::string> readVocab(const std::string& path, CharVocab::Kind kind, int64_t V) {
  std::vector<std::string> entries;
  if (kind == CharVocab::Kind::Bytes && !fs::exists(path)) {
    for (int64_t id = 0; id < V; ++id) entries.push_back(id < 256 ? std::string(1, static_cast<char>(id)) : "<" + std::to_string(id) + ">");
    return entries;
  }
  const json j = readJsonFile(path);
  if (!j.is_array() || static_cast<int64_t>(j.size()) != V)
    throw InputError(path + ": must be a JSON list of vocab_size = " + std::to_string(V) + " strings (id = index)" +
                     (j.is_array() ? ", got " + std::to_string(j.size()) : ""));
  for (size_t id = 0; id < j.size(); ++id) {
    if (!j[id].is_string()) throw InputError(path + ": entry " + std::to_string(id) + " is not a string");
    entries.push_back(j[id].get<std::string>());
  }
  return entries;
}

NormWeights layerNorm(const TensorReader& r, const std::string& name, int64_t D, const std::string& why) {
  return {r.required(name + ".weight", {D}, why), r.required(name + ".bias", {D}, why)};
}

// nn.Linear weights as stored, not in panels: the row GEMM reads them as the format's first
// runtime did, so its models' numbers are bit for bit those they were checked with.
Linear linear(const TensorReader& r, const std::string& weight, const std::string& bias, Shape shape,
              const std::string& why, bool bias_required) {
  const int64_t out = shape.at(0);
  Linear l{Weights(r.required(weight, shape, why)), bias_required ? r.required(bias, {out}, why) : r.optional(bias, {out})};
  return l;
}

void readBlock(const TensorReader& r, const ModelConfig& c, bool mlp, int64_t i, LayerWeights& b) {
  const std::string p = "blocks." + std::to_string(i) + ".";
  const std::string why = "block " + std::to_string(i) + " of n_layers = " + std::to_string(c.n_layers);
  const int64_t D = c.hidden, M = c.mlp_dim;
  b.attn_norm = layerNorm(r, p + "ln1", D, why);
  for (auto [name, dst] : {std::pair{"q", &b.q}, {"k", &b.k}, {"v", &b.v}, {"o", &b.o}})
    *dst = linear(r, p + "attn.w_" + name, p + "attn.b_" + name, {D, D}, why, false);
  if (!mlp) {
    for (const char* n : {"ln2.weight", "ln2.bias", "mlp.w_in", "mlp.b_in", "mlp.w_out", "mlp.b_out"})
      r.forbidden(p + n, "config.json says \"mlp\": false (attention only)");
    return;
  }
  b.mlp_norm = layerNorm(r, p + "ln2", D, why);
  b.up = linear(r, p + "mlp.w_in", p + "mlp.b_in", {M, D}, why + ", [d_mlp, d_model]", true);
  b.down = linear(r, p + "mlp.w_out", p + "mlp.b_out", {D, M}, why + ", [d_model, d_mlp]", true);
}

}  // namespace

Model loadOwnFolder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw InputError(folder + ": not a model folder (no such directory)");
  Model m;
  m.folder = folder;
  OwnFormat own;
  m.config = readConfig((fs::path(folder) / "config.json").string(), own);
  const ModelConfig& c = m.config;
  m.display_name = own.name;
  const std::string vocab_path = (fs::path(folder) / "vocab.json").string();
  m.chars = CharVocab(own.tokenizer, readVocab(vocab_path, own.tokenizer, c.vocab), own.unk_id, vocab_path);
  const TensorReader r(folder);
  const int64_t V = c.vocab, D = c.hidden, T = c.max_positions;
  m.embed = Weights(r.required("tok_emb", {V, D}, "token embedding [vocab_size, d_model]"));
  if (!own.sinusoidal) {
    m.positions = r.required("pos_emb", {T, D}, "learned positions [max_len, d_model]");
  } else {
    r.forbidden("pos_emb", "config.json says \"positional\": \"sinusoidal\" (remove it, or say \"learned\")");
    try {  // the one table no file backs: refuse absurd max_len x d_model before allocating it
      checkMemory(static_cast<uint64_t>(T) * static_cast<uint64_t>(D) * sizeof(float));
    } catch (const InputError& e) {
      throw InputError((fs::path(folder) / "config.json").string() + ": sinusoidal positions [max_len, d_model]: " + e.what());
    }
    m.positions = positionalEncoding(T, D);
  }
  m.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) readBlock(r, c, own.mlp, i, m.layers[i]);
  m.final_norm = layerNorm(r, "ln_f", D, "final LayerNorm");
  if (c.tied) {
    r.forbidden("lm_head", "config.json says \"tied_embeddings\": true (the unembedding is tok_emb)");
    m.head_tied = true;
  } else {
    m.lm_head = Weights(r.required("lm_head", {V, D}, "unembedding [vocab_size, d_model]; or set tied_embeddings"));
  }
  // What the app and the pipeline show of the attention: biases as the files have them.
  m.config.qkv_bias = !m.layers.front().q.bias.empty();
  m.config.o_bias = !m.layers.front().o.bias.empty();
  m.config.mlp_bias = own.mlp;
  readTrainingLog(folder, own.description, m);
  return m;
}

}  // namespace attnscope
