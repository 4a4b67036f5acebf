#include "config/token_file.h"

#include <nlohmann/json.hpp>

#include "config/bundle.h"
#include "registry/name_table.h"
#include "tensor/text_file.h"
#include "tokenizer/pipeline.h"

namespace attnscope {
namespace {

using json = nlohmann::json;

struct PieceStyleRow {
  tok::PieceStyle style;
  const char* name;
};
constexpr PieceStyleRow kPieceStyles[] = {
    {tok::PieceStyle::Plain, "plain"},            // SentencePiece "▁", WordPiece "##", byte fallback
    {tok::PieceStyle::ByteLevel, "byte_level"},  // GPT-2's byte alphabet ("Ġ", "Ċ")
};
const NameTable<tok::PieceStyle> kPieceStyleNames("piece style", kPieceStyles, &PieceStyleRow::style,
                                                  &PieceStyleRow::name);

struct Rows {
  std::vector<std::vector<std::string>> labels;
  std::vector<std::vector<TokenPiece>> pieces;
};

// One row of entries: labels as given, raw pieces labelled by the tokenizer's rules.
void readRow(const json& row, const std::string& where, int64_t expected, const std::string& count_name,
             tok::PieceStyle style, Rows& rows) {
  if (!row.is_array()) throw InputError(where + " must be a list of tokens");
  if (static_cast<int64_t>(row.size()) != expected)
    throw InputError(where + " has " + std::to_string(row.size()) + " tokens but " + count_name + " " +
                     std::to_string(expected));
  std::vector<std::string> raw;
  std::vector<bool> keep;  // labels given as text, and special tokens, stay as they are
  std::vector<TokenPiece> pieces;
  std::vector<std::string> overrides(row.size());
  for (size_t i = 0; i < row.size(); ++i) {
    const json& entry = row[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (entry.is_string()) {
      raw.push_back(entry.get<std::string>());
      keep.push_back(true);
      pieces.push_back({raw.back(), -1});
      continue;
    }
    if (!entry.is_object() || !entry.contains("token") || !entry["token"].is_string())
      throw InputError(at + " must be a label or an object with a \"token\" string");
    const json id = entry.value("id", json(-1));
    if (!id.is_number_integer() || id.get<int64_t>() < -1)
      throw InputError(at + ": \"id\" must be a non-negative integer");
    const json special = entry.value("special", json(false));
    const json label = entry.value("label", json(""));
    if (!special.is_boolean()) throw InputError(at + ": \"special\" must be true or false");
    if (!label.is_string()) throw InputError(at + ": \"label\" must be a string");
    raw.push_back(entry["token"].get<std::string>());
    keep.push_back(special.get<bool>());
    pieces.push_back({raw.back(), id.get<int64_t>()});
    overrides[i] = label.get<std::string>();
  }
  std::vector<std::string> labels = tok::readableLabels(raw, keep, style);
  for (size_t i = 0; i < labels.size(); ++i)
    if (!overrides[i].empty()) labels[i] = overrides[i];
  rows.labels.push_back(std::move(labels));
  rows.pieces.push_back(std::move(pieces));
}

// "query" or "key": one row for every item, or B rows.
Rows readRows(const json& value, const std::string& where, int64_t B, int64_t count, const std::string& count_name,
              tok::PieceStyle style) {
  if (!value.is_array() || value.empty() || (value.size() != 1 && static_cast<int64_t>(value.size()) != B))
    throw InputError(where + " must be a list of 1 or B = " + std::to_string(B) + " rows (one per batch item)");
  Rows rows;
  for (size_t r = 0; r < value.size(); ++r)
    readRow(value[r], where + "[" + std::to_string(r) + "]", count, count_name, style, rows);
  return rows;
}

bool anyObject(const json& rows) {
  for (const json& row : rows)
    for (const json& entry : row)
      if (entry.is_object()) return true;
  return false;
}

}  // namespace

BundleTokens readTokensJson(const std::string& path, int64_t B, int64_t L, int64_t S, const std::string& maps_name) {
  const json doc = readJsonFile(path, kMaxLabelBytes, "a token list");
  if (!doc.is_object() && !doc.is_array())
    throw InputError(path + ": expected {\"query\": [...], \"key\": [...]} or a list of rows");
  const json query = doc.is_array() ? doc : doc.value("query", json());
  if (query.is_null()) throw InputError(path + ": no \"query\" rows");
  tok::PieceStyle style = tok::PieceStyle::Plain;
  if (doc.is_object() && doc.contains("piece_style")) {
    const json& name = doc["piece_style"];
    const auto found = name.is_string() ? kPieceStyleNames.find(name.get<std::string>()) : std::nullopt;
    const std::string spelled = name.is_string() ? name.get<std::string>() : name.dump();
    if (!found) throw InputError(path + ": \"piece_style\": " + kPieceStyleNames.unknown(spelled));
    style = *found;
  }
  BundleTokens tokens;
  Rows q = readRows(query, path + ": query", B, L, maps_name + " has L =", style);
  tokens.query_labels = std::move(q.labels);
  const bool pieces = anyObject(query) || (doc.is_object() && doc.contains("key") && anyObject(doc["key"]));
  if (pieces) tokens.query_pieces = std::move(q.pieces);
  if (doc.is_object() && doc.contains("key")) {
    Rows k = readRows(doc["key"], path + ": key", B, S, maps_name + " has S =", style);
    tokens.key_labels = std::move(k.labels);
    if (pieces) tokens.key_pieces = std::move(k.pieces);
  }
  return tokens;
}

}  // namespace attnscope
