// Test-only: the generation sampler (core/model/generate.h) on rows of logits, for
// tests/cli/test_model_generate.py's sampling checks against an independent reference.
// Usage: attnscope_sample LOGITS.npy TEMPERATURE TOP_K TOP_P SEEDS
//   LOGITS.npy: float32 [R, V]. Prints one JSON list with, per row,
//   {"kept": [[id, p], ...] (samplingDistribution), "draws": [the first pick of
//   TokenSampler(seed) for seed = 0 .. SEEDS - 1]}. Bad input: one line on stderr, exit 1.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/generate.h"
#include "tensor/npy.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: attnscope_sample LOGITS.npy TEMPERATURE TOP_K TOP_P SEEDS\n";
    return 2;
  }
  try {
    using namespace attnscope;
    const Tensor logits = readNpyFloat(argv[1]);
    if (logits.shape.size() != 2) throw std::runtime_error("LOGITS.npy: expected [R, V]");
    const int64_t R = logits.shape[0], V = logits.shape[1];
    SamplingSettings settings;
    settings.greedy = false;
    settings.temperature = std::stod(argv[2]);
    settings.top_k = std::stoll(argv[3]);
    settings.top_p = std::stod(argv[4]);
    const int64_t seeds = std::stoll(argv[5]);
    nlohmann::json out = nlohmann::json::array();
    for (int64_t r = 0; r < R; ++r) {
      const float* row = logits.data.data() + r * V;
      nlohmann::json kept = nlohmann::json::array(), draws = nlohmann::json::array();
      for (const SamplingCandidate& c : samplingDistribution(row, V, settings)) kept.push_back({c.id, c.p});
      for (int64_t seed = 0; seed < seeds; ++seed) {
        SamplingSettings s = settings;
        s.seed = static_cast<uint64_t>(seed);
        TokenSampler sampler(s);
        draws.push_back(sampler.pick(row, V));
      }
      out.push_back({{"kept", kept}, {"draws", draws}});
    }
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "attnscope_sample: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
