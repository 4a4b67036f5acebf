// The registry of model families: one X(name) line per family, in the order messages list
// them; family_<name>() is the declaration in families/<name>.cpp.
#include "model/family.h"

#define ATTNSCOPE_FAMILIES(X) \
  X(gpt2)                     \
  X(llama)                    \
  X(mistral)                  \
  X(qwen2)                    \
  X(gemma2)                   \
  X(gpt_neox)                 \
  X(bert)                     \
  X(qwen3)                    \
  X(smollm3)                  \
  X(gemma3_text)              \
  X(olmo2)                    \
  X(phi3)

namespace attnscope {

#define ATTNSCOPE_DECLARE_FAMILY(name) const Family& family_##name();
ATTNSCOPE_FAMILIES(ATTNSCOPE_DECLARE_FAMILY)
#undef ATTNSCOPE_DECLARE_FAMILY

const std::vector<const Family*>& families() {
#define ATTNSCOPE_LIST_FAMILY(name) &family_##name(),
  static const std::vector<const Family*> all = {ATTNSCOPE_FAMILIES(ATTNSCOPE_LIST_FAMILY)};
#undef ATTNSCOPE_LIST_FAMILY
  return all;
}

std::string familyTypes() {
  std::string out;
  for (const Family* f : families()) out += (out.empty() ? "\"" : ", \"") + std::string(f->model_type) + "\"";
  return out;
}

}  // namespace attnscope
