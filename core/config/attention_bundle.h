// Attention bundles: attention maps computed elsewhere (scripts/export_attention.py, your
// own code), opened without recomputing anything.
//
// How a folder is recognised (bundleKind):
//   attentions.npy or attentions.npz present -> an attention bundle (this file)
//   otherwise                                 -> a tensor bundle (config/bundle.h: query.npy
//                                                and friends, computed here)
//   attentions.* and query.npy both present   -> InputError: ambiguous
// An attention bundle holds
//   attentions.npy  [layers, B, H, L, S] or [B, H, L, S] (one layer); float16/32/64
//     or attentions.npz  the same array under the name "attentions" (np.savez or
//                        np.savez_compressed)
//   tokens.json     optional, per batch item: labels, or raw pieces + ids labelled by the
//                   tokenizer's rules (config/token_file.h); or, for one row shared by every item:
//   tokens.txt      optional, L query labels, one per line (indices when absent)
//   key_tokens.txt  optional, S key labels (when absent: tokens.txt if S == L, else indices)
//   attention_mask.npy  optional [B, S]: 1 = a real key, 0 = padding (masked in the view)
//   query_mask.npy      optional [B, L]: the same for queries (default: attention_mask when S == L)
//   bundle.json     optional: "model" (string), "layer_names" (one string per layer), "notes"
//   steps.json      optional, a generation bundle's (tokens.txt with the `generated` column):
//                   each step's top-5 and chosen token, the predictions at the position before it
//   generated.txt   optional, the same: the generated text
#pragma once

#include <string>

#include "view/view_model.h"

namespace attnscope {

enum class BundleKind {
  Tensors,     // query.npy (+ key/value/weights/masks): attention is computed here
  Attentions,  // attentions.npy / .npz: maps computed elsewhere
};
// InputError naming the folder when it is not a folder or holds both kinds.
BundleKind bundleKind(const std::string& dir);

// Reads and checks an attention bundle (NaN/Inf refused naming the file and index, token
// counts against L and S, a size that does not fit in memory refused with the estimate
// before the data is read). Rows that are not distributions are left to viewFromImported.
ImportedMaps loadAttentionBundle(const std::string& dir);

}  // namespace attnscope
