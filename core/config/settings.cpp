#include "config/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/bundle.h"
#include "config/text_input.h"

namespace attnscope {
namespace {

using nlohmann::json;

const char* scaleName(ScaleChoice s) {
  switch (s) {
    case ScaleChoice::InvSqrtD: return "inv_sqrt_d";
    case ScaleChoice::None: return "none";
    case ScaleChoice::Temperature: return "temperature";
  }
  return "inv_sqrt_d";
}

// Typed readers: a missing key keeps the default; a wrong type or value names the key.
class Reader {
 public:
  explicit Reader(const json& j) : j_(j) {}

  template <typename Fn>
  bool with(const char* key, Fn fn) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return false;
    fn(*it);
    return true;
  }

  void integer(const char* key, int64_t& out, int64_t min, int64_t max) const {
    with(key, [&](const json& v) {
      if (!v.is_number_integer()) fail(key, "must be an integer");
      const int64_t x = v.get<int64_t>();
      if (x < min || x > max) {
        fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(x));
      }
      out = x;
    });
  }
  void seed(const char* key, uint64_t& out) const {
    with(key, [&](const json& v) {
      if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
        fail(key, "must be a non-negative integer");
      }
      out = v.get<uint64_t>();
    });
  }
  void number(const char* key, float& out) const {
    with(key, [&](const json& v) {
      if (!v.is_number()) fail(key, "must be a number");
      const double x = v.get<double>();
      if (!std::isfinite(x)) fail(key, "must be finite");
      out = static_cast<float>(x);
    });
  }
  void boolean(const char* key, bool& out) const {
    with(key, [&](const json& v) {
      if (!v.is_boolean()) fail(key, "must be true or false");
      out = v.get<bool>();
    });
  }
  void string(const char* key, std::string& out) const {
    with(key, [&](const json& v) {
      if (!v.is_string()) fail(key, "must be a string");
      out = v.get<std::string>();
    });
  }
  void integerList(const char* key, std::vector<int64_t>& out) const {
    with(key, [&](const json& v) {
      if (!v.is_array()) fail(key, "must be a list of integers");
      std::vector<int64_t> list;
      for (const json& x : v) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0) fail(key, "must be a list of non-negative integers");
        list.push_back(x.get<int64_t>());
      }
      out = list;
    });
  }
  [[noreturn]] static void fail(const char* key, const std::string& what) {
    throw InputError(std::string("settings: '") + key + "' " + what);
  }

 private:
  const json& j_;
};

constexpr int64_t kMaxLen = 1 << 20;

std::vector<std::string> nonEmptyLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!tokenize(line).empty()) lines.push_back(line);
  }
  return lines;
}

// Tokens of every non-empty line, padded with "<pad>" to the longest; lengths returned.
std::vector<std::vector<std::string>> tokenizeLines(const std::string& text, std::vector<int64_t>& lengths) {
  std::vector<std::vector<std::string>> rows;
  size_t longest = 0;
  for (const std::string& line : nonEmptyLines(text)) {
    rows.push_back(tokenize(line));
    longest = std::max(longest, rows.back().size());
  }
  lengths.clear();
  for (auto& row : rows) {
    lengths.push_back(static_cast<int64_t>(row.size()));
    row.resize(longest, "<pad>");
  }
  return rows;
}

// [B, T, D]: embedding of each token (+ sinusoidal position when enabled).
Tensor embedTokens(const std::vector<std::vector<std::string>>& rows, int64_t D, bool positional, uint64_t seed) {
  const int64_t B = static_cast<int64_t>(rows.size()), T = static_cast<int64_t>(rows[0].size());
  Tensor x({B, T, D});
  const Tensor pe = positional ? positionalEncoding(T, D) : Tensor();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<float> e = tokenEmbedding(rows[b][t], D, seed);
      float* out = &x.data[(b * T + t) * D];
      for (int64_t c = 0; c < D; ++c) out[c] = e[c] + (positional ? pe.data[t * D + c] : 0.0f);
    }
  return x;
}

Tensor gaussian(const Shape& shape, uint64_t seed) {
  // tokenEmbedding is a seeded N(0, 1) stream; reuse it with a fixed label per tensor.
  Tensor t(shape);
  const std::vector<float> values = tokenEmbedding("", numel(shape), seed);
  t.data = values;
  return t;
}

// Settings valid lengths win when given (clamped to [0, S]); missing entries use `natural`.
std::vector<int64_t> resolveValidLens(const std::vector<int64_t>& requested, const std::vector<int64_t>& natural,
                                      int64_t S) {
  std::vector<int64_t> lens = natural;
  for (size_t b = 0; b < lens.size() && b < requested.size(); ++b) lens[b] = std::clamp<int64_t>(requested[b], 0, S);
  return lens;
}

}  // namespace

const char* inputSourceName(InputSource s) {
  switch (s) {
    case InputSource::Text: return "text";
    case InputSource::Synthetic: return "synthetic";
    case InputSource::Bundle: return "bundle";
  }
  return "text";
}

json settingsToJson(const Settings& s, const ViewFocus& focus) {
  return json{
      {"source", inputSourceName(s.source)},
      {"text", s.text},
      {"cross_attention", s.cross_attention},
      {"key_text", s.key_text},
      {"synthetic_L", s.synthetic_L},
      {"synthetic_S", s.synthetic_S},
      {"batch", s.batch},
      {"valid_lens", s.valid_lens},
      {"bundle_path", s.bundle_path},
      {"heads", s.heads},
      {"head_dim", s.head_dim},
      {"positional_encoding", s.positional_encoding},
      {"bias", s.bias},
      {"seed", s.seed},
      {"mask", s.mask.toString()},
      {"fill", s.fill == MaskFill::NegInf ? "inf" : "1e9"},
      {"scale", scaleName(s.scale)},
      {"temperature", s.temperature},
      {"dropout", s.dropout},
      {"train", s.train},
      {"mistake", mistakeName(s.mistake)},
      {"batch_item", focus.batch_item},
      {"focused_layer", focus.layer},
      {"focused_head", focus.head},
      {"prob_colormap", colormapName(s.prob_colormap)},
      {"log_scale", s.log_scale},
      {"folded_layout", s.folded_layout},
      {"export_dir", s.export_dir},
      {"cell_px", s.cell_px},
      {"export_formats", s.export_formats},
  };
}

std::vector<std::string> exportFormatNames() { return {"png", "svg", "pdf", "npy", "csv"}; }

Settings settingsFromJson(const json& j) {
  if (!j.is_object()) throw InputError("settings: expected a JSON object at the top level");
  Settings s;
  const Reader r(j);
  r.with("source", [&](const json& v) {
    const std::string name = v.is_string() ? v.get<std::string>() : "";
    if (name == "text") s.source = InputSource::Text;
    else if (name == "synthetic") s.source = InputSource::Synthetic;
    else if (name == "bundle") s.source = InputSource::Bundle;
    else Reader::fail("source", "must be \"text\", \"synthetic\" or \"bundle\"");
  });
  r.string("text", s.text);
  r.boolean("cross_attention", s.cross_attention);
  r.string("key_text", s.key_text);
  r.integer("synthetic_L", s.synthetic_L, 1, kMaxLen);
  r.integer("synthetic_S", s.synthetic_S, 1, kMaxLen);
  r.integer("batch", s.batch, 1, 4096);
  r.integerList("valid_lens", s.valid_lens);
  r.string("bundle_path", s.bundle_path);
  r.integer("heads", s.heads, 1, 4096);
  r.integer("head_dim", s.head_dim, 1, 65536);
  r.boolean("positional_encoding", s.positional_encoding);
  r.boolean("bias", s.bias);
  r.seed("seed", s.seed);
  r.with("mask", [&](const json& v) {
    if (!v.is_string()) Reader::fail("mask", "must be a mask string such as \"causal+window:3\"");
    try {
      s.mask = MaskSpec::parse(v.get<std::string>());
    } catch (const InputError& e) {
      Reader::fail("mask", std::string("is invalid: ") + e.what());
    }
  });
  r.with("fill", [&](const json& v) {
    const std::string name = v.is_string() ? v.get<std::string>() : "";
    if (name == "inf" || name == "-inf") s.fill = MaskFill::NegInf;
    else if (name == "1e9" || name == "-1e9") s.fill = MaskFill::NegBillion;
    else Reader::fail("fill", "must be \"inf\" or \"1e9\"");
  });
  r.with("scale", [&](const json& v) {
    const std::string name = v.is_string() ? v.get<std::string>() : "";
    if (name == "inv_sqrt_d") s.scale = ScaleChoice::InvSqrtD;
    else if (name == "none") s.scale = ScaleChoice::None;
    else if (name == "temperature") s.scale = ScaleChoice::Temperature;
    else Reader::fail("scale", "must be \"inv_sqrt_d\", \"none\" or \"temperature\"");
  });
  r.number("temperature", s.temperature);
  if (!(s.temperature > 0.0f)) Reader::fail("temperature", "must be > 0");
  r.number("dropout", s.dropout);
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) Reader::fail("dropout", "must be in [0, 1)");
  r.boolean("train", s.train);
  r.with("mistake", [&](const json& v) {
    if (!v.is_string()) Reader::fail("mistake", "must be a mistake name such as \"floor-div-scale\"");
    try {
      s.mistake = mistakeFromName(v.get<std::string>());
    } catch (const InputError& e) {
      Reader::fail("mistake", std::string("is invalid: ") + e.what());
    }
  });
  r.with("prob_colormap", [&](const json& v) {
    if (!v.is_string()) Reader::fail("prob_colormap", "must be a colormap name");
    try {
      s.prob_colormap = colormapFromName(v.get<std::string>());
    } catch (const InputError& e) {
      Reader::fail("prob_colormap", std::string("is invalid: ") + e.what());
    }
  });
  r.boolean("log_scale", s.log_scale);
  r.boolean("folded_layout", s.folded_layout);
  r.string("export_dir", s.export_dir);
  r.integer("cell_px", s.cell_px, 0, 4096);
  r.with("export_formats", [&](const json& v) {
    const std::vector<std::string> known = exportFormatNames();
    std::vector<std::string> formats;
    for (const json& x : v.is_array() ? v : json::array({nullptr})) {
      if (!x.is_string() || std::find(known.begin(), known.end(), x.get<std::string>()) == known.end()) {
        Reader::fail("export_formats", "must be a list of png, svg, pdf, npy, csv");
      }
      formats.push_back(x.get<std::string>());
    }
    s.export_formats = formats;
  });
  return s;
}

ViewFocus viewFocusFromJson(const json& j) {
  if (!j.is_object()) throw InputError("settings: expected a JSON object at the top level");
  ViewFocus focus;
  const Reader r(j);
  r.integer("batch_item", focus.batch_item, 0, 4095);
  r.integer("focused_layer", focus.layer, 0, 4095);
  r.integer("focused_head", focus.head, 0, 4095);
  return focus;
}

Settings loadSettingsFile(const std::string& path, ViewFocus* focus) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("settings file " + path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  json j;
  try {
    j = json::parse(buffer.str());
  } catch (const json::parse_error& e) {
    throw InputError("settings file " + path + ": invalid JSON at byte " + std::to_string(e.byte));
  }
  try {
    Settings settings = settingsFromJson(j);
    if (focus) *focus = viewFocusFromJson(j);
    return settings;
  } catch (const InputError& e) {
    throw InputError("settings file " + path + ": " + e.what());
  }
}

void saveSettingsFile(const Settings& settings, const std::string& path, const ViewFocus& focus) {
  // Write a temporary file beside the target, then rename: readers never see half a file.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("settings file " + path + ": cannot write (" + std::strerror(errno) + ")");
    out << settingsToJson(settings, focus).dump(2) << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError("settings file " + path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError("settings file " + path + ": cannot replace (" + why + ")");
  }
}

AttentionOptions attentionOptions(const Settings& settings) {
  return attentionOptions(settings, settings.modelDim());
}

AttentionOptions attentionOptions(const Settings& settings, int64_t model_dim) {
  if (settings.heads < 1) throw InputError("heads must be >= 1, got H=" + std::to_string(settings.heads));
  AttentionOptions o;
  o.heads = settings.heads;
  o.mask = settings.mask;
  o.fill = settings.fill;
  o.dropout = settings.dropout;
  o.train = settings.train;
  o.seed = settings.seed;
  o.mistake = settings.mistake;
  switch (settings.scale) {
    case ScaleChoice::InvSqrtD: o.scale_mode = ScaleMode::InvSqrtD; break;
    case ScaleChoice::None: o.scale_mode = ScaleMode::None; break;
    case ScaleChoice::Temperature: {
      if (!(settings.temperature > 0.0f) || !std::isfinite(settings.temperature)) {
        throw InputError("temperature must be > 0, got " + std::to_string(settings.temperature));
      }
      const double d = static_cast<double>(model_dim) / static_cast<double>(settings.heads);
      o.scale_mode = ScaleMode::Custom;
      o.custom_scale = static_cast<float>(1.0 / (settings.temperature * std::sqrt(d)));
      break;
    }
  }
  return o;
}

AttentionInputs buildInputs(const Settings& s) {
  if (s.heads < 1) throw InputError("heads must be >= 1, got H=" + std::to_string(s.heads));
  if (s.head_dim < 1) throw InputError("head size must be >= 1, got d=" + std::to_string(s.head_dim));
  const int64_t H = s.heads, D = s.modelDim();
  AttentionInputs in;

  if (s.source == InputSource::Bundle) {
    if (s.bundle_path.empty()) throw InputError("bundle: no bundle directory chosen");
    in = loadBundle(s.bundle_path, D, s.seed).inputs;
    if (!s.valid_lens.empty() && in.query.shape.size() == 3 && in.key.shape.size() == 3) {
      const int64_t S = in.key.dim(1);
      in.valid_lens = resolveValidLens(s.valid_lens, std::vector<int64_t>(in.key.dim(0), S), S);
    }
    if (in.query.shape.size() == 3 && in.key.shape.size() == 3 && in.value.shape.size() == 3 &&
        in.w_q.shape.size() == 2) {
      checkMemory(estimateTraceBytes(in.query.dim(0), in.query.dim(1), in.key.dim(1), in.w_q.dim(0),
                                     in.query.dim(2), in.key.dim(2), in.value.dim(2), H));
    }
    return in;
  }

  if (s.source == InputSource::Synthetic) {
    if (s.batch < 1 || s.synthetic_L < 1 || s.synthetic_S < 1) {
      throw InputError("synthetic sizes must be >= 1, got B=" + std::to_string(s.batch) +
                       " L=" + std::to_string(s.synthetic_L) + " S=" + std::to_string(s.synthetic_S));
    }
    const int64_t B = s.batch, L = s.synthetic_L, S = s.synthetic_S;
    checkMemory(estimateTraceBytes(B, L, S, D, D, D, D, H));
    in.query = gaussian({B, L, D}, s.seed ^ 0x51ull);
    // Self-attention when the lengths match and cross-attention is off; otherwise one
    // seeded memory sequence [B, S, D] serves as key and value (d2l's attention(X, Y, Y)).
    if (!s.cross_attention && L == S) {
      in.key = in.value = in.query;
    } else {
      in.key = gaussian({B, S, D}, s.seed ^ 0x4Bull);
      in.value = in.key;
    }
    if (!s.valid_lens.empty()) in.valid_lens = resolveValidLens(s.valid_lens, std::vector<int64_t>(B, S), S);
    for (int64_t i = 0; i < L; ++i) in.query_tokens.push_back(std::to_string(i));
    for (int64_t j = 0; j < S; ++j) in.key_tokens.push_back(std::to_string(j));
    seedDefaultWeights(in, D, D, D, D, s.bias, s.seed);
    return in;
  }

  // Text: one batch item per non-empty line, shorter lines padded with "<pad>".
  std::vector<int64_t> query_lens;
  const std::vector<std::vector<std::string>> query_rows = tokenizeLines(s.text, query_lens);
  if (query_rows.empty()) throw InputError("text: no tokens (type at least one word)");
  const int64_t B = static_cast<int64_t>(query_rows.size()), L = static_cast<int64_t>(query_rows[0].size());
  std::vector<std::vector<std::string>> key_rows = query_rows;
  std::vector<int64_t> key_lens = query_lens;
  if (s.cross_attention) {
    key_rows = tokenizeLines(s.key_text, key_lens);
    if (key_rows.empty()) throw InputError("key text: no tokens (type at least one word)");
    if (key_rows.size() == 1 && B > 1) {  // one key sequence serves every query line
      key_rows.assign(B, key_rows[0]);
      key_lens.assign(B, key_lens[0]);
    }
    if (static_cast<int64_t>(key_rows.size()) != B) {
      throw InputError("key text has " + std::to_string(key_rows.size()) + " lines but the text has " +
                       std::to_string(B) + " (use one key line or one per text line)");
    }
  }
  const int64_t S = static_cast<int64_t>(key_rows[0].size());
  checkMemory(estimateTraceBytes(B, L, S, D, D, D, D, H));

  in.query = embedTokens(query_rows, D, s.positional_encoding, s.seed);
  in.key = s.cross_attention ? embedTokens(key_rows, D, s.positional_encoding, s.seed) : in.query;
  in.value = in.key;
  const bool ragged = std::any_of(key_lens.begin(), key_lens.end(), [S](int64_t n) { return n != S; });
  if (!s.valid_lens.empty()) in.valid_lens = resolveValidLens(s.valid_lens, key_lens, S);
  else if (ragged) in.valid_lens = key_lens;
  in.query_tokens = query_rows[0];
  in.key_tokens = key_rows[0];
  if (B > 1) {
    in.batch_query_tokens = query_rows;
    in.batch_key_tokens = key_rows;
  }
  seedDefaultWeights(in, D, D, D, D, s.bias, s.seed);
  return in;
}

}  // namespace attnscope
