// tokens.json of an attention bundle (docs/cli.md, "Attention bundles"): the tokens of every batch
// item, as labels or as the tokenizer's raw pieces with their ids. Labels of raw pieces are
// the tokenizer's readable labels (core/tokenizer/labels.cpp), so a bundle from
// scripts/export_attention.py reads exactly as a Hugging Face folder opened here.
//
//   {"piece_style": "byte_level" | "plain",      optional, default "plain"
//    "query": [ROW, ...],                         one row for every item, or one per item
//    "key":   [ROW, ...]}                         optional; absent: the query's (S == L)
//   or just [ROW, ...] (the query rows)
//   ROW: a list of entries, ENTRY: "label" (shown as is) or
//        {"token": "Ġthe", "id": 262, "special": false, "label": "optional override"}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "view/view_model.h"

namespace attnscope {

struct BundleTokens {
  std::vector<std::vector<std::string>> query_labels;  // [rows][L]
  std::vector<std::vector<std::string>> key_labels;    // [rows][S], empty = none given
  std::vector<std::vector<TokenPiece>> query_pieces;   // same rows; empty when every entry is a label
  std::vector<std::vector<TokenPiece>> key_pieces;
};

// Reads PATH for maps of B items, L queries and S keys (maps_name names the maps in errors).
// InputError "PATH: <problem>" (naming the row and entry) on bad input.
BundleTokens readTokensJson(const std::string& path, int64_t B, int64_t L, int64_t S, const std::string& maps_name);

}  // namespace attnscope
