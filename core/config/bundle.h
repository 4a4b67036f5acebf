// Tensor bundles: a directory of .npy files (query/key/value, weights, masks, tokens).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "attention/attention.h"

namespace attnscope {

struct Bundle {
  AttentionInputs inputs;
  bool has_weights = false;  // w_q/w_k/w_v/w_o given (else seeded defaults are used)
  nlohmann::json meta;       // bundle.json contents (heads, mask, scale, fill, notes) or {}
};

// Reads BUNDLE_DIR. key/value absent: self-attention on query. Weights absent:
// seeded defaults with D = default_model_dim (or bundle.json "d_model"). Throws
// InputError naming the file and problem.
Bundle loadBundle(const std::string& dir, int64_t default_model_dim, uint64_t seed);

// A JSON file of at most max_bytes, parsed: InputError "PATH: not valid JSON (<why>)", or
// readSmallFile's errors (WHAT names the kind of file in them).
nlohmann::json readJsonFile(const std::string& path, size_t max_bytes, const std::string& what);

// DIR/bundle.json as an object ({} when absent), without reading any tensor: lets callers
// pick H (and so the default D) before loadBundle. InputError on malformed JSON.
nlohmann::json readBundleMeta(const std::string& dir);

}  // namespace attnscope
