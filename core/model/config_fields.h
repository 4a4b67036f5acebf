// config.json's fields as a family reads them (family.h's hooks too): each accessor checks
// the value and throws one InputError naming the file and the field.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tensor/tensor.h"

namespace attnscope {

// config.json's fields, each message naming the file and the field.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw InputError(path_ + ": \"" + field + "\" " + why);
  }
  // The first of the names that is present and not null ("" when none).
  std::string present(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (j_.contains(n) && !j_[n].is_null()) return n;
    return "";
  }
  int64_t integer(std::initializer_list<const char*> names, int64_t lo, int64_t hi,
                  std::optional<int64_t> fallback = std::nullopt) const {
    const std::string name = present(names);
    if (name.empty()) {
      if (fallback) return *fallback;
      fail(*names.begin(), "is missing");
    }
    const nlohmann::json& v = j_[name];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail(name, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v.get<int64_t>();
  }
  double number(const nlohmann::json& obj, const std::string& key, const std::string& field, double fallback, double lo,
                double hi) const {
    if (!obj.contains(key) || obj[key].is_null()) return fallback;
    const nlohmann::json& v = obj[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
      fail(field, "must be a number in [" + formatNumber(lo) + ", " + formatNumber(hi) + "]");
    return v.get<double>();
  }
  double number(const char* key, double fallback, double lo, double hi) const {
    return number(j_, key, key, fallback, lo, hi);
  }
  bool boolean(const char* key, bool fallback) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_boolean()) fail(key, "must be true or false");
    return j_[key].get<bool>();
  }
  std::string text(const nlohmann::json& obj, const std::string& key, const std::string& field, const std::string& fallback) const {
    if (!obj.contains(key) || obj[key].is_null()) return fallback;
    if (!obj[key].is_string()) fail(field, "must be a string");
    return obj[key].get<std::string>();
  }
  const nlohmann::json& root() const { return j_; }
  static std::string formatNumber(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
};

// "\"a\", \"b\"" for messages listing the supported values.
std::string quotedList(std::initializer_list<const char*> values);

}  // namespace attnscope
