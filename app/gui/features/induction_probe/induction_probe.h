// The induction probe (issue 37): "repeated random tokens" puts BOS plus N seeded random
// tokens, twice, into the model's text box (model/induction_probe.h); the head table and the
// overview then score induction on it as TransformerLens does (the stripe
// diagonal(offset = 1 - N), analysis/head_metrics.h). A section of the control panel under
// Generate (a model run).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

struct InductionProbeState {
  int n = 50;             // N, the random tokens of each copy
  uint64_t seed = 0;      // the next probe's seed (each probe takes the next)
  int64_t last_n = 0;     // N of the probe put into the text box (0: none yet)
  uint64_t last_seed = 0;
  std::string error;      // why the last probe failed ("" otherwise)
};

// Puts a new probe of N tokens into the text box (the loaded model's tokenizer); an error
// (no model loaded yet, N past the context) stays in the section.
void putInductionProbe(AppState& state);
void drawInductionProbeSection(AppState& state);
// State-log keys: induction_probe {n, seed, last_n, last_seed, error}.
void inductionProbeToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
