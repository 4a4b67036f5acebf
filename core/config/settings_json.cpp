// Settings as JSON: the app's saved settings, `--settings FILE`, and the JSON beside every
// export. Unknown keys are ignored; a wrong type or value names the key.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>

#include "attention/mistakes.h"
#include "config/settings.h"
#include "model/interventions.h"
#include "tensor/npy.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

using nlohmann::json;

// Typed readers: a missing key keeps the default; a wrong type or value names the key.
// With a problems list, a bad key keeps its default and adds one line there instead.
class Reader {
 public:
  Reader(const json& j, std::vector<std::string>* problems) : j_(j), problems_(problems) {}

  template <typename Fn>
  bool with(const char* key, Fn fn) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return false;
    try {
      fn(*it);
    } catch (const InputError& e) {
      if (!problems_) throw;
      problems_->push_back(e.what());
      return false;
    }
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
  // valid(x) false: "must be <requirement>".
  template <typename Valid>
  void number(const char* key, float& out, Valid valid, const char* requirement) const {
    with(key, [&](const json& v) {
      if (!v.is_number()) fail(key, "must be a number");
      const double x = v.get<double>();
      if (!std::isfinite(x) || std::fabs(x) > std::numeric_limits<float>::max()) fail(key, "must be a finite number");
      if (!valid(static_cast<float>(x))) fail(key, std::string("must be ") + requirement);
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
  // Non-negative integers, or `lowest` where it means something (valid_lens' kFollowValidLen).
  void integerList(const char* key, std::vector<int64_t>& out, int64_t lowest = 0) const {
    with(key, [&](const json& v) {
      if (!v.is_array()) fail(key, "must be a list of integers");
      std::vector<int64_t> list;
      for (const json& x : v) {
        if (!x.is_number_integer() || (x.get<int64_t>() < 0 && x.get<int64_t>() != lowest))
          fail(key, lowest < 0 ? "must be a list of non-negative integers (or " + std::to_string(lowest) + ")"
                               : "must be a list of non-negative integers");
        list.push_back(x.get<int64_t>());
      }
      out = list;
    });
  }
  // A name of `table`; "is invalid: unknown NOUN 'x' (one of: ...)" for a name it lacks.
  template <typename T>
  void named(const char* key, T& out, const NameTable<T>& table, const char* what) const {
    with(key, [&](const json& v) {
      if (!v.is_string()) fail(key, std::string("must be ") + what);
      const std::optional<T> value = table.find(v.get<std::string>());
      if (!value) fail(key, "is invalid: " + table.unknown(v.get<std::string>()));
      out = *value;
    });
  }
  // A name of `table`, given as a string; anything else "must be \"a\", \"b\" or \"c\"".
  template <typename T>
  void oneOf(const char* key, T& out, const NameTable<T>& table) const {
    with(key, [&](const json& v) {
      const std::optional<T> value = v.is_string() ? table.find(v.get<std::string>()) : std::nullopt;
      if (!value) fail(key, "must be " + table.list(" or ", true));
      out = *value;
    });
  }
  [[noreturn]] static void fail(const char* key, const std::string& what) {
    throw InputError(std::string("settings: '") + key + "' " + what);
  }

 private:
  const json& j_;
  std::vector<std::string>* problems_;
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
      {"model", s.model},
      {"model_text", s.model_text},
      {"model_truncate", truncateNames().name(s.model_truncate)},
      {"model_ablate", s.model_ablate},
      {"model_knockout", s.model_knockout},
      {"patch_corrupt", s.patch_corrupt},
      {"patch_answer", s.patch_answer},
      {"patch_wrong", s.patch_wrong},
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
      {"kv_heads", s.kv_heads},
      {"rope", s.rope},
      {"rope_base", s.rope_base},
      {"rope_style", ropeStyleName(s.rope_style)},
      {"alibi", s.alibi},
      {"softcap", s.softcap > 0.0f ? json(s.softcap) : json(nullptr)},
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

Settings settingsFromJson(const json& j, std::vector<std::string>* problems) {
  if (!j.is_object()) throw InputError("settings: expected a JSON object at the top level");
  Settings s;
  const Reader r(j, problems);
  r.oneOf("source", s.source, inputSourceNames());
  r.string("text", s.text);
  r.boolean("cross_attention", s.cross_attention);
  r.string("key_text", s.key_text);
  r.integer("synthetic_L", s.synthetic_L, 1, kMaxLen);
  r.integer("synthetic_S", s.synthetic_S, 1, kMaxLen);
  r.integer("batch", s.batch, 1, 4096);
  r.integerList("valid_lens", s.valid_lens, kFollowValidLen);
  r.string("bundle_path", s.bundle_path);
  r.string("model", s.model);
  if (s.model.empty()) Reader::fail("model", "must name a shipped model or a model folder");
  r.string("model_text", s.model_text);
  r.named("model_truncate", s.model_truncate, truncateNames(), "\"none\", \"start\" or \"end\"");
  r.string("model_ablate", s.model_ablate);
  r.string("model_knockout", s.model_knockout);
  r.string("patch_corrupt", s.patch_corrupt);
  r.string("patch_answer", s.patch_answer);
  r.string("patch_wrong", s.patch_wrong);
  for (const auto& [key, ablate, knockout] : {std::tuple{"model_ablate", s.model_ablate, std::string()},
                                              {"model_knockout", std::string(), s.model_knockout}}) {
    try {  // the syntax here; layers, heads and positions against the model when it runs
      parseInterventions(ablate, knockout);
    } catch (const InputError& e) {
      Reader::fail(key, e.what());
    }
  }
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
  r.oneOf("fill", s.fill, maskFillNames());
  r.oneOf("scale", s.scale, scaleChoiceNames());
  r.number("scale_factor", s.scale_factor, [](float f) { return scaleFromFactor(f).has_value(); }, "> 0");
  r.number("temperature", s.temperature, [](float t) { return t > 0.0f; }, "> 0");
  r.number("dropout", s.dropout, [](float p) { return p >= 0.0f && p < 1.0f; }, "in [0, 1)");
  r.boolean("train", s.train);
  r.named("mistake", s.mistake, mistakeNames(), "a mistake name such as \"floor-div-scale\"");
  r.integer("kv_heads", s.kv_heads, 0, 4096);
  r.boolean("rope", s.rope);
  r.number("rope_base", s.rope_base, [](float base) { return base > 1.0f; }, "> 1");
  r.named("rope_style", s.rope_style, ropeStyleNames(), "\"half\" or \"interleaved\"");
  r.boolean("alibi", s.alibi);
  r.number("softcap", s.softcap, [](float cap) { return cap >= 0.0f; }, "> 0 (or null for off)");
  r.named("prob_colormap", s.prob_colormap, colormapNames(), "a colormap name");
  r.boolean("log_scale", s.log_scale);
  r.boolean("folded_layout", s.folded_layout);
  r.string("export_dir", s.export_dir);
  r.integer("cell_px", s.cell_px, 0, 4096);
  r.with("export_formats", [&](const json& v) {
    const std::vector<std::string> known = exportFormatNames();
    std::vector<std::string> formats;
    for (const json& x : v.is_array() ? v : json::array({nullptr})) {
      if (!x.is_string() || std::find(known.begin(), known.end(), x.get<std::string>()) == known.end()) {
        Reader::fail("export_formats", "must be a list of png, svg, pdf, npy, csv, html");
      }
      formats.push_back(x.get<std::string>());
    }
    s.export_formats = formats;
  });
  return s;
}

ViewFocus viewFocusFromJson(const json& j, std::vector<std::string>* problems) {
  if (!j.is_object()) throw InputError("settings: expected a JSON object at the top level");
  ViewFocus focus;
  const Reader r(j, problems);
  r.integer("batch_item", focus.batch_item, 0, 4095);
  r.integer("focused_layer", focus.layer, 0, 4095);
  r.integer("focused_head", focus.head, 0, 4095);
  return focus;
}

namespace {

// The file's text; InputError naming it when it cannot be read. A settings file is a few
// KiB: stop early on anything huge or endless (/dev/zero).
std::string readSettingsText(const std::string& path) {
  try {
    return readSmallFile(path, 16u << 20, "a settings file");
  } catch (const InputError& e) {
    throw InputError(std::string("settings file ") + e.what());
  }
}

json parseSettingsText(const std::string& path, const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError("settings file " + path + ": invalid JSON at byte " + std::to_string(e.byte));
  } catch (const json::exception& e) {
    // e.g. out_of_range for 1e400: keep the human part of "[json.exception.out_of_range.406] ...".
    const std::string why = e.what();
    const size_t bracket = why.find("] ");
    throw InputError("settings file " + path + ": " + (bracket == std::string::npos ? why : why.substr(bracket + 2)));
  }
}

// Number literals too large for a double (1e400) become null, so that nlohmann can parse
// the rest and the other keys survive; each one replaced adds a problem.
std::string nullOverflowingNumbers(const std::string& text, std::vector<std::string>& problems) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      ++i;
    } else if (c == '"') {
      in_string = true;
      out += c;
      ++i;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t end = text.find_first_not_of("0123456789+-.eE", i);
      const std::string literal = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
      if (std::isfinite(std::strtod(literal.c_str(), nullptr))) {
        out += literal;
      } else {
        out += "null";
        problems.push_back("number " + literal.substr(0, 24) + " is too large");
      }
      i += literal.size();
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// PATH.bad-YYYYMMDD-HHMMSS, or with -2, -3, ... when that name is taken.
std::string freeBadName(const std::string& path) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char date[32];
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", &local);
  const std::string base = path + ".bad-" + date;
  std::string name = base;
  std::error_code ec;
  for (int n = 2; std::filesystem::exists(std::filesystem::symlink_status(name, ec)); ++n) name = base + "-" + std::to_string(n);
  return name;
}

}  // namespace

Settings loadSettingsFile(const std::string& path, ViewFocus* focus) {
  const json j = parseSettingsText(path, readSettingsText(path));
  try {
    Settings settings = settingsFromJson(j);
    if (focus) *focus = viewFocusFromJson(j);
    return settings;
  } catch (const InputError& e) {
    throw InputError("settings file " + path + ": " + e.what());
  }
}

RecoveredSettings recoverSettingsFile(const std::string& path) {
  RecoveredSettings result;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return result;
  std::string problem;
  try {
    std::vector<std::string> bad;
    const std::string text = nullOverflowingNumbers(readSettingsText(path), bad);
    const json j = parseSettingsText(path, text);
    result.settings = settingsFromJson(j, &bad);
    result.focus = viewFocusFromJson(j, &bad);
    if (bad.empty()) return result;
    problem = "settings file " + path + ": " + bad.front() +
              (bad.size() > 1 ? " (and " + std::to_string(bad.size() - 1) + " more)" : "");
  } catch (const InputError& e) {
    result.settings = Settings();
    result.focus = ViewFocus();
    problem = e.what();
  }
  const std::string moved = freeBadName(path);
  if (std::rename(path.c_str(), moved.c_str()) == 0) {
    result.moved_to = moved;
    result.notice = problem + ". Started on defaults for what was bad; the file is kept as " + moved;
  } else {
    result.notice = problem + ". Started on defaults for what was bad (the file could not be moved aside: " +
                    std::strerror(errno) + ")";
  }
  return result;
}

void saveSettingsFile(const Settings& settings, const std::string& path, const ViewFocus& focus) {
  // Temp file + rename (removed on SIGINT/SIGTERM): readers never see half a file.
  try {
    writeFileAtomic(path, settingsToJson(settings, focus).dump(2) + "\n");
  } catch (const InputError& e) {
    throw InputError("settings file " + std::string(e.what()));
  }
}

}  // namespace attnscope
