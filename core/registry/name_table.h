// One enum <-> name table for every registry of named kinds (input sources, scales, mask
// fills, mistakes, RoPE styles, map kinds, colour maps), with one convention for a name no
// row has: find() returns nullopt and the caller says why with unknown(name), which lists
// the valid names ("unknown mistake 'x' (one of: none, floor-div-scale, ...)"); parse()
// does both and throws InputError. A table reads the registry's own rows (their other
// columns stay there) through member pointers, so a new kind is still one row. The first
// row of a value is its name; later rows of the same value are accepted spellings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace attnscope {

template <typename E>
class NameTable {
 public:
  // noun: what a name names, for unknown(): "mistake", "colormap", "rope style".
  template <typename Row, size_t N>
  NameTable(const char* noun, const Row (&rows)[N], E Row::*value, const char* Row::*name) : noun_(noun) {
    for (const Row& row : rows) entries_.push_back({row.*value, row.*name});
  }

  std::optional<E> find(const std::string& name) const {
    for (const Entry& entry : entries_)
      if (name == entry.name) return entry.value;
    return std::nullopt;
  }

  // "unknown NOUN 'NAME' (one of: a, b, c)".
  std::string unknown(const std::string& name) const {
    return "unknown " + std::string(noun_) + " '" + name + "' (one of: " + list() + ")";
  }

  // find(), or InputError(unknown(name)).
  E parse(const std::string& name) const {
    const std::optional<E> value = find(name);
    if (!value) throw InputError(unknown(name));
    return *value;
  }

  // The value's name (its first row); a value without a row gets the first row's name.
  const char* name(E value) const {
    for (const Entry& entry : entries_)
      if (entry.value == value) return entry.name;
    return entries_.front().name;
  }

  // Every value once, in row order.
  std::vector<E> values() const {
    std::vector<E> all;
    for (const Entry& entry : entries_)
      if (std::find(all.begin(), all.end(), entry.value) == all.end()) all.push_back(entry.value);
    return all;
  }

  // The names, one per value, in row order: "a, b, c"; last = " or " gives "a, b or c";
  // quoted gives "\"a\", \"b\" or \"c\"". Other spellings are not listed.
  std::string list(const char* last = ", ", bool quoted = false) const {
    const std::vector<E> all = values();
    std::string text;
    for (size_t n = 0; n < all.size(); ++n) {
      if (n > 0) text += n + 1 == all.size() ? last : ", ";
      text += quoted ? "\"" + std::string(name(all[n])) + "\"" : std::string(name(all[n]));
    }
    return text;
  }

 private:
  struct Entry {
    E value;
    const char* name;
  };
  const char* noun_;
  std::vector<Entry> entries_;
};

}  // namespace attnscope
