// Test-only: runs a model folder on a list of inputs one after another through one runner
// (its KV cache: attention/cached_rows.h) and each through a fresh runner, and compares them
// bit for bit (every layer's probabilities, scores and the logits), for
// tests/cli/test_model_generate.py. Usage: attnscope_incremental FOLDER INPUTS.json
//   INPUTS.json: a JSON list of id lists (Hugging Face folders) or of texts (attnscope-model/1).
// Prints one JSON list with, per input, {"L", "first_computed", "identical"}. Exit 1 on bad input.
#include <cstring>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "tensor/text_file.h"

namespace {

using namespace attnscope;

bool sameBits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

bool identical(const ModelRun& a, const ModelRun& b) {
  if (a.layers.size() != b.layers.size() || !sameBits(a.logits.dense(), b.logits.dense())) return false;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const AttentionTrace &x = a.layers[i], &y = b.layers[i];
    if (!sameBits(x.probs, y.probs) || !sameBits(x.scores, y.scores) || !sameBits(x.k, y.k) || !sameBits(x.v, y.v) ||
        !sameBits(x.output, y.output))
      return false;
  }
  return true;
}

nlohmann::json row(const ModelRun& cached, const ModelRun& fresh) {
  return {{"L", cached.tokens.ids.size()}, {"first_computed", cached.first_computed},
          {"identical", identical(cached, fresh)}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: attnscope_incremental FOLDER INPUTS.json\n";
    return 2;
  }
  try {
    const auto inputs = nlohmann::json::parse(readSmallFile(argv[2], size_t{64} << 20, "a list of inputs"));
    nlohmann::json out = nlohmann::json::array();
    if (isHfModelFolder(argv[1])) {
      auto model = std::make_shared<const Model>(loadModel(argv[1]));
      ModelRunner cached(model);
      for (const auto& ids : inputs) {
        const ModelRun& a = cached.run(tokensFromIds(*model, ids.get<std::vector<int64_t>>()));
        ModelRunner fresh(model);
        out.push_back(row(a, fresh.run(tokensFromIds(*model, ids.get<std::vector<int64_t>>()))));
      }
    } else {
      auto model = std::make_shared<const Model>(loadModel(argv[1]));
      ModelRunner cached(model);
      for (const auto& text : inputs) {
        const ModelRun& a = cached.run(text.get<std::string>());
        ModelRunner fresh(model);
        out.push_back(row(a, fresh.run(text.get<std::string>())));
      }
    }
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "attnscope_incremental: " << e.what() << "\n";
    return 1;
  }
}
