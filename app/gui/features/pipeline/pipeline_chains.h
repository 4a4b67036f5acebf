// The shape pipeline's chains of boxes (Q, K, V, attention, output) of one trace, a model
// layer's own stages among them (q/k RMSNorm, RoPE with its base and rotated features, or
// "no positions" on a NoPE layer), and that layer's facts as lines: what the panel draws and
// its state-log keys say, from the trace's stages and the view's LayerFacts (no maths here).
#pragma once

#include <string>
#include <vector>

#include "attention/attention.h"
#include "view/view_model.h"

namespace attnscope {

// One box of a chain: how we got here (arrow label) and the shape we arrived at.
struct PipelineStep {
  std::string arrow;     // "q_proj", "view", ...; empty for the first box of a chain
  std::string symbolic;  // "[B, L, H*d]"
  Shape shape;
  std::string op, code;
};

struct PipelineChain {
  const char* title;
  std::vector<PipelineStep> steps;
};

// facts: the layer's (a model run), or null (the sandbox: its own RoPE checkbox's stages).
std::vector<PipelineChain> pipelineChains(const AttentionTrace& t, bool folded, const LayerFacts* facts);

// The layer's sizes, window, positions, q/k norm and soft-cap, one line each.
std::vector<std::string> layerFactLines(const LayerFacts& f);

}  // namespace attnscope
