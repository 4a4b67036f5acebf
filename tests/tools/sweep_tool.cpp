// Test-only, for tests/cli/test_ablation_sweep.py: the ablation sweep (model/ablation_sweep.h)
// of a model folder on a list of ids, or its induction probe (model/induction_probe.h).
//   attnscope_sweep FOLDER IDS POSITION zero|mean
//     IDS: comma-separated token ids; POSITION: 0-based, negative from the end. Prints
//     {"position", "top", "logprob", "effect": [N][H], "cancelled_after"}: the sweep, and how
//     many heads a sweep cancelled at its first progress report had done.
//   attnscope_sweep FOLDER --probe N SEED
//     Prints {"text", "ids", "typed"}: the probe, and the ids its text tokenizes to.
// Exit 1 on bad input.
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/ablation_sweep.h"
#include "model/induction_probe.h"

int main(int argc, char** argv) {
  using namespace attnscope;
  if (argc != 5) {
    std::cerr << "usage: attnscope_sweep FOLDER IDS POSITION zero|mean\n";
    return 2;
  }
  try {
    auto model = std::make_shared<const Model>(loadModel(argv[1]));
    if (std::string(argv[2]) == "--probe") {
      const InductionProbe probe = repeatedRandomTokens(*model, std::stoll(argv[3]), std::stoull(argv[4]));
      std::cout << nlohmann::json{{"text", probe.text}, {"ids", probe.ids}, {"typed", tokenizeForModel(*model, probe.text).ids}}.dump()
                << "\n";
      return 0;
    }
    std::vector<int64_t> ids;
    std::stringstream list(argv[2]);
    for (std::string id; std::getline(list, id, ',');) ids.push_back(std::stoll(id));
    const AblationMode mode = std::string(argv[4]) == "mean" ? AblationMode::Mean : AblationMode::Zero;
    ModelRunner runner(model);
    const ModelTokens tokens = tokensFromIds(*model, ids);
    const AblationSweep sweep = ablationSweep(runner, tokens, std::stoll(argv[3]), mode);
    nlohmann::json effect = nlohmann::json::array();
    for (int64_t l = 0; l < sweep.effect.shape[0]; ++l) {
      const auto row = sweep.effect.data.begin() + l * sweep.effect.shape[1];
      effect.push_back(std::vector<float>(row, row + sweep.effect.shape[1]));
    }
    int64_t reports = 0;
    try {
      ablationSweep(runner, tokens, std::stoll(argv[3]), mode, [&](double) { return ++reports < 1; });
    } catch (const Cancelled&) {
    }
    std::cout << nlohmann::json{{"position", sweep.position}, {"top", sweep.top}, {"logprob", sweep.logprob},
                                {"effect", effect}, {"cancelled_after", reports}}.dump()
              << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "attnscope_sweep: " << e.what() << "\n";
    return 1;
  }
}
