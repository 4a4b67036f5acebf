// Bundle source: a folder of .npy files (config/bundle.h reads and checks them); the
// settings add valid lengths and the memory check for the sizes they describe.
#include "config/inputs.h"

#include "tensor/memory.h"

namespace attnscope {

Bundle bundleInputs(const Settings& s) {
  if (s.bundle_path.empty()) throw InputError("bundle: no bundle directory chosen");
  Bundle bundle = loadBundle(s.bundle_path, s.modelDim(), s.seed);
  AttentionInputs& in = bundle.inputs;
  if (!s.valid_lens.empty()) {
    const int64_t S = in.key.dim(1);
    in.valid_lens = resolveValidLens(s.valid_lens, std::vector<int64_t>(in.key.dim(0), S), S);
  }
  // Refuse before runAttention allocates the [B, L, S] masks and [B, H, L, S] scores.
  const int64_t B = in.query.dim(0), L = in.query.dim(1), S = in.key.dim(1);
  try {
    checkMemory(estimateTraceBytes(B, L, S, in.w_q.dim(0), in.query.dim(2), in.key.dim(2), in.value.dim(2), s.heads));
  } catch (const InputError& e) {
    throw InputError(s.bundle_path + "/query.npy (B=" + std::to_string(B) + ", L=" + std::to_string(L) +
                     ", S=" + std::to_string(S) + ", H=" + std::to_string(s.heads) + "): " + e.what());
  }
  return bundle;
}

}  // namespace attnscope
