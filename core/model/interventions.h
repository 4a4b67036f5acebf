// Interventions on a model run, one definition for the commands and the app: head ablation
// (a head's z, its slice of the concatenated attention output before o_proj, set to zero or
// to its mean over the text's positions; its own map unchanged), attention knockout (the
// score of query i for key j set to -inf before the softmax, for one head or every head of a
// layer; the row renormalises) and, for activation patching (model/patching.h), a head's z or
// the residual stream entering a layer replaced by another run's. The runner
// (ModelRunner::setInterventions) applies them and recomputes from the first layer they touch.
//
// Sizes: N layers, H heads, L positions, d head size, D hidden size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/cached_rows.h"

namespace attnscope {

struct ModelConfig;

enum class AblationMode { Zero, Mean };

struct HeadAblation {
  int64_t layer = 0, head = -1;  // head -1: every head of the layer ("L3H*")
  AblationMode mode = AblationMode::Zero;
  std::string item;  // as the user wrote it ("L0H1:mean"), for messages
};

struct Knockout {
  int64_t layer = 0, head = -1;  // head -1: every head of the layer
  int64_t query = 0, key = 0;    // 0-based positions
  std::string item;
};

// Activation patching: head `head`'s z at every position replaced by z [L, d].
struct HeadPatch {
  int64_t layer = 0, head = 0;
  std::vector<float> z;  // [L, d]
};
// The residual stream entering layer `layer` at `position` replaced by x [D].
struct ResidualPatch {
  int64_t layer = 0, position = 0;
  std::vector<float> x;  // [D]
};

struct Interventions {
  std::vector<HeadAblation> ablations;
  std::vector<Knockout> knockouts;
  std::vector<HeadPatch> head_patches;
  std::vector<ResidualPatch> residual_patches;
  bool empty() const { return ablations.empty() && knockouts.empty() && head_patches.empty() && residual_patches.empty(); }
  // The user's specs back: "ablate L1H2,L0H1:mean; knockout L1H0:9-2" ("" when none).
  std::string describe() const;
  std::string ablateSpec() const;    // "L1H2,L0H1:mean"
  std::string knockoutSpec() const;  // "L1H0:9-2,L2H*:5-0"
};

// `--ablate L1H2,L0H1:mean,L3H*` and `--knockout L1H0:9-2,L2H*:5-0` (either may be empty).
// InputError naming the flag and the item: `--ablate: "L1X2": not LAYERhHEAD[:zero|:mean]`.
Interventions parseInterventions(const std::string& ablate, const std::string& knockout);

// InputError for an item outside the model or the text of L tokens (L < 0: not checked):
// `--ablate: "L9H2": the model has 6 layers`, a head past H, a position past the text, a
// key after its query in a causal model.
void checkInterventions(const Interventions& interventions, const ModelConfig& config, int64_t L);

// What layer `layer` of H heads does to its heads (attention/cached_rows.h): empty when
// nothing. Knockouts at positions >= L are left out.
HeadEdits headEdits(const Interventions& interventions, int64_t layer, int64_t H, int64_t L);

// Whether layer `layer` has a mean ablation (its z's mean changes with any row).
bool hasMeanAblation(const Interventions& interventions, int64_t layer);

// Per layer [N]: the first position whose computation in that layer differs between runs
// under a and under b (L when none): a knockout from its query on, a patched residual from
// its position on, an ablation or a head patch from 0.
std::vector<int64_t> changedRows(const Interventions& a, const Interventions& b, int64_t N, int64_t H, int64_t L);
// Per layer [N]: the first position whose attention (scores, maps, the heads' own z) differs
// between runs under a and under b on the same input (L when none): a knockout from its
// query on, a patched residual from its position on. An ablation or a head patch changes
// only what the heads' z feed forward.
std::vector<int64_t> attentionChangedRows(const Interventions& a, const Interventions& b, int64_t N, int64_t H, int64_t L);

}  // namespace attnscope
