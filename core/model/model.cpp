#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "attention/attention.h"
#include "config/text_input.h"
#include "model/config_limits.h"
#include "tensor/memory.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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

ModelConfig readConfig(const std::string& path) {
  const json j = readJsonFile(path);
  const ConfigReader r(j, path);
  const std::string format = r.text("format");
  if (format != kModelFormat)
    r.fail("format", "is \"" + format + "\" but must be \"" + kModelFormat + "\"");
  ModelConfig c;
  c.name = r.text("name");
  c.description = r.text("description");
  c.n_layers = r.integer("n_layers", 1, kMaxLayers);
  c.d_model = r.integer("d_model", 1, kMaxDim);
  c.n_heads = r.integer("n_heads", 1, c.d_model);
  c.mlp = r.boolean("mlp");
  c.d_mlp = r.integer("d_mlp", c.mlp ? 1 : 0, kMaxDim * 4);
  c.max_len = r.integer("max_len", 1, kMaxDim);
  c.vocab_size = r.integer("vocab_size", 1, kMaxVocab);
  c.tokenizer = r.choice("tokenizer", {"chars", "bytes"}) == 0 ? Tokenizer::Chars : Tokenizer::Bytes;
  c.unk_id = r.integer("unk_id", 0, c.vocab_size - 1);
  c.positional = r.choice("positional", {"learned", "sinusoidal"}) == 0 ? Positional::Learned : Positional::Sinusoidal;
  c.activation = r.choice("activation", {"gelu", "gelu_tanh"}) == 0 ? Activation::Gelu : Activation::GeluTanh;
  const json& eps = r.get("ln_eps");
  if (!eps.is_number() || !std::isfinite(eps.get<double>()) || eps.get<double>() <= 0.0 || eps.get<double>() > 1.0)
    r.fail("ln_eps", "must be a number in (0, 1]");
  c.ln_eps = eps.get<float>();
  c.tied_embeddings = r.boolean("tied_embeddings");
  if (c.d_model % c.n_heads != 0)
    r.fail("n_heads", std::to_string(c.n_heads) + " does not divide d_model " + std::to_string(c.d_model));
  return c;
}

// Number of UTF-8 characters in s (bytes that do not start a character count as one).
size_t characterCount(const std::string& s) { return utf8Characters(s).size(); }

std::string byteLabel(int64_t b) {
  if (b >= 0x20 && b < 0x7f) return std::string(1, static_cast<char>(b));
  if (b < 0x20) return escapeToken(std::string(1, static_cast<char>(b)));
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(b));  // not UTF-8 on its own
  return buf;
}

void readVocab(Model& m, const std::string& path) {
  const ModelConfig& c = m.config;
  if (c.tokenizer == Tokenizer::Bytes && !fs::exists(path)) {
    for (int64_t id = 0; id < c.vocab_size; ++id)
      m.vocab.push_back(id < 256 ? std::string(1, static_cast<char>(id)) : "<" + std::to_string(id) + ">");
    return;
  }
  const json j = readJsonFile(path);
  if (!j.is_array() || static_cast<int64_t>(j.size()) != c.vocab_size)
    throw InputError(path + ": must be a JSON list of vocab_size = " + std::to_string(c.vocab_size) +
                     " strings (id = index)" + (j.is_array() ? ", got " + std::to_string(j.size()) : ""));
  for (size_t id = 0; id < j.size(); ++id) {
    if (!j[id].is_string()) throw InputError(path + ": entry " + std::to_string(id) + " is not a string");
    const std::string entry = j[id].get<std::string>();
    m.vocab.push_back(entry);
    if (c.tokenizer != Tokenizer::Chars) continue;
    const bool is_unk = static_cast<int64_t>(id) == c.unk_id;
    if (characterCount(entry) != 1) {
      if (is_unk) continue;  // the unknown token's label ("<unk>") is never matched
      throw InputError(path + ": entry " + std::to_string(id) + " (\"" + escapeToken(entry) +
                       "\") is not one character (the chars tokenizer maps one character to one id)");
    }
    if (!m.char_ids.emplace(entry, static_cast<int64_t>(id)).second)
      throw InputError(path + ": entry " + std::to_string(id) + " (\"" + escapeToken(entry) + "\") repeats entry " +
                       std::to_string(m.char_ids[entry]));
  }
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

}  // namespace

int64_t ModelTokens::unknownCount() const {
  int64_t n = 0;
  for (uint8_t u : unknown) n += u;
  return n;
}

Model loadModel(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw InputError(folder + ": not a model folder (no such directory)");
  Model m;
  m.folder = folder;
  m.config = readConfig((fs::path(folder) / "config.json").string());
  const ModelConfig& c = m.config;
  readVocab(m, (fs::path(folder) / "vocab.json").string());

  const TensorReader r(folder);
  const int64_t V = c.vocab_size, D = c.d_model, M = c.d_mlp, T = c.max_len;
  m.tok_emb = r.required("tok_emb", {V, D}, "token embedding [vocab_size, d_model]");
  if (c.positional == Positional::Learned) {
    m.pos_emb = r.required("pos_emb", {T, D}, "learned positions [max_len, d_model]");
  } else {
    r.forbidden("pos_emb", "config.json says \"positional\": \"sinusoidal\" (remove it, or say \"learned\")");
    try {  // the one table no file backs: refuse absurd max_len x d_model before allocating it
      checkMemory(static_cast<uint64_t>(T) * static_cast<uint64_t>(D) * sizeof(float));
    } catch (const InputError& e) {
      throw InputError((fs::path(folder) / "config.json").string() + ": sinusoidal positions [max_len, d_model]: " + e.what());
    }
    m.pos_emb = positionalEncoding(T, D);
  }
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    BlockWeights b;
    const std::string why = "block " + std::to_string(i) + " of n_layers = " + std::to_string(c.n_layers);
    b.ln1_weight = r.required(p + "ln1.weight", {D}, why);
    b.ln1_bias = r.required(p + "ln1.bias", {D}, why);
    b.attn.w_q = r.required(p + "attn.w_q", {D, D}, why);
    b.attn.w_k = r.required(p + "attn.w_k", {D, D}, why);
    b.attn.w_v = r.required(p + "attn.w_v", {D, D}, why);
    b.attn.w_o = r.required(p + "attn.w_o", {D, D}, why);
    b.attn.b_q = r.optional(p + "attn.b_q", {D});
    b.attn.b_k = r.optional(p + "attn.b_k", {D});
    b.attn.b_v = r.optional(p + "attn.b_v", {D});
    b.attn.b_o = r.optional(p + "attn.b_o", {D});
    const std::vector<std::string> mlp_names = {"ln2.weight", "ln2.bias", "mlp.w_in", "mlp.b_in", "mlp.w_out", "mlp.b_out"};
    if (c.mlp) {
      b.ln2_weight = r.required(p + "ln2.weight", {D}, why);
      b.ln2_bias = r.required(p + "ln2.bias", {D}, why);
      b.w_in = r.required(p + "mlp.w_in", {M, D}, why + ", [d_mlp, d_model]");
      b.b_in = r.required(p + "mlp.b_in", {M}, why);
      b.w_out = r.required(p + "mlp.w_out", {D, M}, why + ", [d_model, d_mlp]");
      b.b_out = r.required(p + "mlp.b_out", {D}, why);
    } else {
      for (const std::string& n : mlp_names)
        r.forbidden(p + n, "config.json says \"mlp\": false (attention only)");
    }
    m.blocks.push_back(std::move(b));
  }
  m.ln_f_weight = r.required("ln_f.weight", {D}, "final LayerNorm");
  m.ln_f_bias = r.required("ln_f.bias", {D}, "final LayerNorm");
  if (c.tied_embeddings) {
    r.forbidden("lm_head", "config.json says \"tied_embeddings\": true (the unembedding is tok_emb)");
    m.lm_head = m.tok_emb;
  } else {
    m.lm_head = r.required("lm_head", {V, D}, "unembedding [vocab_size, d_model]; or set tied_embeddings");
  }
  readTrainingLog(folder, c.description, m);
  return m;
}

std::string tokenLabel(const Model& model, int64_t id) {
  if (model.config.tokenizer == Tokenizer::Bytes && id < 256) return byteLabel(id);
  return escapeToken(model.vocab.at(id));
}

ModelTokens tokenizeForModel(const Model& model, const std::string& text) {
  ModelTokens t;
  const ModelConfig& c = model.config;
  if (c.tokenizer == Tokenizer::Bytes) {
    for (unsigned char byte : text) {
      const bool known = byte < c.vocab_size;
      t.ids.push_back(known ? byte : c.unk_id);
      t.text.emplace_back(1, static_cast<char>(byte));
      t.label.push_back(byteLabel(byte));
      t.unknown.push_back(known ? 0 : 1);
    }
    return t;
  }
  for (std::string& ch : utf8Characters(text)) {
    const auto it = model.char_ids.find(ch);
    const int64_t id = it == model.char_ids.end() ? c.unk_id : it->second;
    t.ids.push_back(id);
    // The unknown id is unknown even when its vocabulary entry is a character that matched
    // (python-code's "\uFFFD": what a text box makes of an emoji it cannot hold).
    t.unknown.push_back(id == c.unk_id ? 1 : 0);
    t.label.push_back(escapeToken(ch));
    t.text.push_back(std::move(ch));
  }
  return t;
}

std::string escapeToken(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

}  // namespace attnscope
