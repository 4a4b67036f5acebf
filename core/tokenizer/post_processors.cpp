// Post-processors of tokenizer.json, one row each in kPostProcessors (processors/*.rs): the
// special tokens that add_special_tokens puts around one sequence.
#include <sstream>

#include "tokenizer/pipeline.h"

namespace attnscope::tok {
namespace {

// One element of a single-sequence template: the sequence itself (nullopt) or special pieces.
using TemplateItem = std::optional<SpecialPiece>;

PostProcessor templateProcessor(std::vector<TemplateItem> items) {
  return [items](std::vector<Token> sequence) {
    std::vector<Token> out;
    for (const TemplateItem& item : items) {
      if (!item) {
        out.insert(out.end(), sequence.begin(), sequence.end());
        continue;
      }
      for (size_t i = 0; i < item->ids.size(); ++i) {
        Token token;
        token.id = item->ids[i];
        token.piece = item->pieces[i];
        token.special = true;
        out.push_back(token);
      }
    }
    return out;
  };
}

SpecialPiece specialOf(const Node& tokens, const std::string& name, const Node& where) {
  const Node entry = tokens.at(name);
  if (!entry.value.is_object()) where.fail("names \"" + name + "\", which special_tokens does not define");
  const Node ids = entry.at("ids"), pieces = entry.at("tokens");
  if (!ids.value.is_array() || !pieces.value.is_array() || ids.value.size() != pieces.value.size()) {
    entry.fail("must have lists \"ids\" and \"tokens\" of one length");
  }
  SpecialPiece special;
  for (size_t i = 0; i < ids.value.size(); ++i) {
    if (!ids.value[i].is_number_integer() || ids.value[i].get<int64_t>() < 0) ids.at(i).fail("must be an id");
    if (!pieces.value[i].is_string()) pieces.at(i).fail("must be a string");
    special.ids.push_back(ids.value[i].get<int64_t>());
    special.pieces.push_back(pieces.value[i].get<std::string>());
  }
  return special;
}

// "$A", "$A:0", "$", "$1" (sequence A, type id 1), "[CLS]", "[CLS]:0" (template.rs Piece::try_from).
TemplateItem itemOfString(const std::string& text, const Node& special_tokens, const Node& where) {
  const std::string name = text.substr(0, text.find(':'));
  if (name.empty() || name[0] != '$') return specialOf(special_tokens, name, where);
  const std::string sequence = name.substr(1);
  if (sequence == "B" || sequence == "b") where.fail("uses $B, which a single sequence does not have");
  const bool type_id = !sequence.empty() && sequence.find_first_not_of("0123456789") == std::string::npos;
  if (sequence.empty() || sequence == "A" || sequence == "a" || type_id) return std::nullopt;
  where.fail("has \"" + text + "\", which is neither $A, $B nor a special token");
}

TemplateItem itemOfJson(const Node& item, const Node& special_tokens) {
  if (item.value.is_string()) return itemOfString(item.value.get<std::string>(), special_tokens, item);
  if (item.has("Sequence")) {
    if (item.at("Sequence").string("id", "A") != "A") item.fail("uses sequence B, which a single sequence does not have");
    return std::nullopt;
  }
  if (item.has("SpecialToken")) return specialOf(special_tokens, item.at("SpecialToken").string("id"), item);
  item.fail("must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
}

PostProcessor makeTemplate(const Node& node) {
  const Node single = node.at("single"), special_tokens = node.at("special_tokens");
  std::vector<TemplateItem> items;
  if (single.value.is_string()) {
    std::istringstream words(single.value.get<std::string>());
    for (std::string word; words >> word;) items.push_back(itemOfString(word, special_tokens, single));
  } else if (single.value.is_array()) {
    for (size_t i = 0; i < single.value.size(); ++i) items.push_back(itemOfJson(single.at(i), special_tokens));
  } else {
    single.fail(single.value.is_null() ? "is missing" : "must be a template string or list");
  }
  return templateProcessor(std::move(items));
}

// BertProcessing / RobertaProcessing: cls $A sep, each ["piece", id].
SpecialPiece pairOf(const Node& node) {
  const json& v = node.value;
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer() || v[1].get<int64_t>() < 0) {
    node.fail(v.is_null() ? "is missing" : "must be [\"piece\", id]");
  }
  return SpecialPiece{{v[1].get<int64_t>()}, {v[0].get<std::string>()}};
}

PostProcessor makeClsSep(const Node& node) {
  return templateProcessor({pairOf(node.at("cls")), std::nullopt, pairOf(node.at("sep"))});
}

PostProcessor makeSequence(const Node& node);

const Kind<PostProcessor> kPostProcessors[] = {
    {"TemplateProcessing", makeTemplate},
    {"BertProcessing", makeClsSep},
    {"RobertaProcessing", makeClsSep},
    {"ByteLevel", [](const Node&) { return PostProcessor([](std::vector<Token> tokens) { return tokens; }); }},
    {"Sequence", makeSequence},
};

PostProcessor makeSequence(const Node& node) {
  const auto steps = makeListFromRegistry(node.at("processors"), kPostProcessors);
  return [steps](std::vector<Token> tokens) {
    for (const auto& step : steps) tokens = step(std::move(tokens));
    return tokens;
  };
}

}  // namespace

PostProcessor makePostProcessor(const Node& node) { return makeFromRegistry(node, kPostProcessors); }

PostProcessor makeBosEosProcessor(std::vector<SpecialPiece> before, std::vector<SpecialPiece> after) {
  std::vector<TemplateItem> items(before.begin(), before.end());
  items.push_back(std::nullopt);
  items.insert(items.end(), after.begin(), after.end());
  return templateProcessor(std::move(items));
}

}  // namespace attnscope::tok
