// Settings as JSON: the app's saved settings, `--settings FILE`, and the JSON beside every
// export. Unknown keys are ignored; a wrong type or value names the key.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/settings.h"

namespace attnscope {
namespace {

using nlohmann::json;

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

}  // namespace

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
      {"fill", maskFillName(s.fill)},
      {"scale", scaleChoiceName(s.scale)},
      {"scale_factor", s.scale_factor},
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

Settings settingsFromJson(const json& j) {
  if (!j.is_object()) throw InputError("settings: expected a JSON object at the top level");
  Settings s;
  const Reader r(j);
  r.with("source", [&](const json& v) {
    const std::optional<InputSource> source = v.is_string() ? inputSourceFromName(v.get<std::string>()) : std::nullopt;
    if (!source) Reader::fail("source", "must be \"text\", \"synthetic\" or \"bundle\"");
    s.source = *source;
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
    const std::optional<MaskFill> fill = v.is_string() ? maskFillFromName(v.get<std::string>()) : std::nullopt;
    if (!fill) Reader::fail("fill", "must be \"inf\" or \"1e9\"");
    s.fill = *fill;
  });
  r.with("scale", [&](const json& v) {
    const std::optional<ScaleChoice> scale = v.is_string() ? scaleChoiceFromName(v.get<std::string>()) : std::nullopt;
    if (!scale) Reader::fail("scale", "must be \"inv_sqrt_d\", \"none\", \"temperature\" or \"factor\"");
    s.scale = *scale;
  });
  r.number("scale_factor", s.scale_factor);
  if (!scaleFromFactor(s.scale_factor)) Reader::fail("scale_factor", "must be > 0");
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

}  // namespace attnscope
