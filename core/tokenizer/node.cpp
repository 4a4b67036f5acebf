// Node: tokenizer.json values with their place, for one-line errors that name file and field.
#include "tensor/tensor.h"
#include "tokenizer/pipeline.h"

namespace attnscope::tok {
namespace {
const json& nullJson() {
  static const json null_value;
  return null_value;
}
std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}
}  // namespace

Node Node::at(const std::string& key) const {
  const std::string child = field.empty() ? key : field + "." + key;
  if (!value.is_object()) return Node{nullJson(), file, child};
  const auto it = value.find(key);
  return Node{it == value.end() ? nullJson() : *it, file, child};
}

Node Node::at(size_t index) const {
  const std::string child = field + "[" + std::to_string(index) + "]";
  return Node{value.is_array() && index < value.size() ? value[index] : nullJson(), file, child};
}

void Node::fail(const std::string& problem) const {
  throw InputError(file + ": " + (field.empty() ? "" : field + " ") + problem);
}

bool Node::has(const std::string& key) const {
  return value.is_object() && value.contains(key) && !value[key].is_null();
}

const json& Node::object() const {
  if (!value.is_object()) fail(value.is_null() ? "is missing" : "must be an object");
  return value;
}

std::string Node::string(const std::string& key) const {
  const Node child = at(key);
  if (!child.value.is_string()) child.fail(child.value.is_null() ? "is missing" : "must be a string");
  return child.value.get<std::string>();
}

std::string Node::string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

bool Node::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const Node child = at(key);
  if (!child.value.is_boolean()) child.fail("must be true or false");
  return child.value.get<bool>();
}

int64_t Node::integer(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const Node child = at(key);
  if (!child.value.is_number_integer()) child.fail("must be an integer");
  return child.value.get<int64_t>();
}

std::string Node::type(const std::vector<std::string>& supported) const {
  object();
  const std::string name = string("type");
  for (const auto& s : supported) {
    if (s == name) return name;
  }
  at("type").fail("\"" + name + "\" is not supported (" + joinNames(supported) + ")");
}

void checkGrowth(size_t before, size_t after, const std::string& where) {
  constexpr size_t kMaxGrowth = 64, kSlack = size_t{64} << 10;
  if (after > kMaxGrowth * before + kSlack) throw InputError(where + " grows the text more than 64 times");
}

}  // namespace attnscope::tok
