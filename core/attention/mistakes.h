// The mistakes lab: run attention the wrong way on purpose, as a buggy PyTorch module
// would, so the maps can be compared with the correct pipeline. Seed 000's listing has
// the first two; seed 003's "common mistakes" list has the rest. This file holds the
// registry (names, descriptions, fixes) and the lab's narration: which sizes a mistake
// cannot run, what it did to these inputs and which pipeline lines show the bug. What each
// mistake changes in the maths is decided in one place, planRun (attention/kernel.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "registry/name_table.h"

namespace attnscope {

enum class Mistake {
  None,
  FloorDivisionScale,         // scores // sqrt(d): floor division, integer scores (seed 000)
  KVReshapedWithQueryLength,  // k/v .view(B, L, H, d): right only when S == L (seed 000)
  NoHeadSplit,                // no view + transpose(1,2): one map over the full D
  SharedProjection,           // [nn.Linear(D, D)] * 4: one weight for q, k, v and o
  NoScaling,                  // scores not divided by sqrt(d)
  ReshapeWithoutTranspose,    // context [B, H, L, d] reshaped to [B, L, D] without transpose
  MaskNotBroadcast,           // [B, S] padding mask added to [B, H, L, S] without unsqueeze
};

// "none", "floor-div-scale", ...: unknown names read "unknown mistake 'x' (one of: none, ...)".
const NameTable<Mistake>& mistakeNames();
std::vector<Mistake> allMistakes();          // in enum order, None first (for combos / --help)
const char* mistakeName(Mistake mistake);    // "none", "floor-div-scale", ...
std::string mistakeDescription(Mistake mistake);  // one line: what goes wrong (which seed listing)
const char* mistakeEffect(Mistake mistake);       // what goes wrong, without the listing
const char* mistakeSource(Mistake mistake);       // the seed listing, e.g. "seed 003, mistake 5" ("" for None)
const char* mistakeFix(Mistake mistake);          // the correct PyTorch line ("" for None)

// ---- the lab's steps in runAttention (internal to core/attention) ----
struct AttentionInputs;
struct AttentionOptions;
struct AttentionTrace;
struct MaskSet;
struct RunSizes;
struct Stage;

// InputError when the mistake needs H query heads with their own K/V heads (G == H) or
// per-head RoPE/ALiBi that it has no heads for.
void checkMistakeHeads(const AttentionOptions& options, int64_t H, int64_t G);
// InputError, as PyTorch would raise, for a mistake these sizes cannot run.
void checkMistakeSizes(const AttentionOptions& options, const RunSizes& sizes);
// Seed 003's mistake 3: rewrites the padding components of `set` [B, L, S] to what a
// [B, S] mask added without unsqueeze applies; returns the trace note.
std::string misbroadcastPadding(MaskSet& set, int64_t B, int64_t L, int64_t S, int64_t H);
// What the mistake did to these inputs, one line; `mask_note` comes from misbroadcastPadding.
std::string mistakeNote(const AttentionTrace& t, const AttentionInputs& in, const std::string& mask_note);
// The affected stages show the buggy line (marked "BUG") and the shape it really has.
void markMistakeStages(std::vector<Stage>& stages, const AttentionTrace& t);

}  // namespace attnscope
