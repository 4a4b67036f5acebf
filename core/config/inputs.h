// The three input sources behind buildInputs(): each turns the settings into attention
// inputs. One file per source (input_text.cpp, input_synthetic.cpp, input_bundle.cpp);
// inputs.cpp dispatches on settings.source. Internal to core/config: callers use
// configureRun() (config/run.h) or buildInputs() (config/settings.h).
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.h"
#include "config/bundle.h"
#include "config/settings.h"

namespace attnscope {

// One batch item per non-empty line of settings.text (cross-attention: key_text), shorter
// lines padded with "<pad>" and masked by valid lengths; seeded embeddings and weights.
AttentionInputs textInputs(const Settings& settings);

// Seeded N(0, 1) inputs of any B, L, S: query [B, L, D]; key = value = query for
// self-attention (L == S, no cross-attention), else one memory sequence [B, S, D].
AttentionInputs syntheticInputs(const Settings& settings);

// The bundle folder settings.bundle_path: tensors, masks and labels as loadBundle reads
// them; seeded weights of D = settings.modelDim() (or bundle.json "d_model") when absent.
Bundle bundleInputs(const Settings& settings);

// kv_heads G on multi-head weights (seeded, or a bundle's [D, Dk]): K/V heads pooled per
// group (poolKeyValueHeads). Weights that are already [G*d, Dk] say G themselves (the core
// checks that they agree). InputError when G does not divide H.
void groupKeyValueHeads(const Settings& settings, AttentionInputs& inputs);

// Valid lengths [B]: `requested` (the settings') wins where given and not negative
// (kFollowValidLen), clamped to [0, S]; the other items keep `natural`.
std::vector<int64_t> resolveValidLens(const std::vector<int64_t>& requested, const std::vector<int64_t>& natural,
                                      int64_t S);

}  // namespace attnscope
