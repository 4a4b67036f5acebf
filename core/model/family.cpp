#include "model/family.h"

namespace attnscope {

std::string TensorNames::of(Role role, int64_t layer) const {
  const auto it = names_.find(role);
  if (it == names_.end()) return "";
  std::string name = it->second;
  const size_t at = name.find("{i}");
  if (at != std::string::npos) name.replace(at, 3, std::to_string(layer));
  return name;
}

}  // namespace attnscope
