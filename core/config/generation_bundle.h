// A generation as files (issue 21): what `attnscope model generate --out DIR` writes and
// what the app's Ctrl+S writes on a generation. The folder is an attention bundle
// (config/attention_bundle.h) that reopens: attentions.npy [n_layers, 1, H, L, L],
// tokens.txt (`position<TAB>id<TAB>token[<TAB>unknown]`, a fifth column `generated` on the
// generated positions), steps.json, generated.txt and bundle.json (model, notes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/generate.h"
#include "view/view_model.h"

namespace attnscope {

// tokens.txt of `model run` / `model generate`: positions from first_generated on get the
// fifth column `generated` (pass the length for none); a byte-fallback piece whose label is a
// character or "·" keeps its raw piece ("<0xE4>") in a sixth.
std::string tokensText(const ModelTokens& tokens, int64_t first_generated);
// steps.json: one object per step (position, id, token, prob, rank, top [[id, token, prob]], ms).
nlohmann::json stepsJson(const std::vector<GenerationStep>& steps);

struct GenerationFiles {
  const ViewModel* view = nullptr;  // a model run's view of the whole sequence (every layer's probs)
  ModelTokens tokens;               // the whole sequence
  int64_t prompt_length = 0;
  std::vector<GenerationStep> steps;
  std::string generated_text;
};
// Writes the bundle into a new folder `dir` (InputError when it exists: never overwritten),
// staged in a sibling folder and renamed into place, so a failure leaves nothing.
void writeGenerationBundle(const std::string& dir, const GenerationFiles& files);
// The first of BASE-1, BASE-2, ... in parent that does not exist.
std::string freshFolderName(const std::string& parent, const std::string& base);

}  // namespace attnscope
