// Test-only: encodes texts with a folder's tokenizer (core/tokenizer) for the Python checks
// in tests/cli (test_tokenizer_gpt2.py compares the ids with a reference encoder).
// Usage: attnscope_tokenize FOLDER TEXTS.json [--no-special]
//   TEXTS.json: a JSON list of strings. Prints one JSON list with, per text,
//   {"ids": [...], "pieces": [...], "labels": [...]}. Bad input: one line on stderr, exit 1.
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tensor/text_file.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::strcmp(argv[3], "--no-special") != 0)) {
    std::cerr << "usage: attnscope_tokenize FOLDER TEXTS.json [--no-special]\n";
    return 2;
  }
  try {
    const auto tokenizer = attnscope::HfTokenizer::load(argv[1]);
    const auto texts = nlohmann::json::parse(attnscope::readSmallFile(argv[2], size_t{256} << 20, "a list of texts"));
    nlohmann::json out = nlohmann::json::array();
    for (const auto& text : texts) {
      nlohmann::json ids = nlohmann::json::array(), pieces = nlohmann::json::array(), labels = nlohmann::json::array();
      for (const auto& token : tokenizer.encode(text.get<std::string>(), argc == 3)) {
        ids.push_back(token.id);
        pieces.push_back(token.piece);
        labels.push_back(token.label);
      }
      out.push_back({{"ids", ids}, {"pieces", pieces}, {"labels", labels}});
    }
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "attnscope_tokenize: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
