#include "gui/features/pipeline/pipeline_chains.h"

#include <cstdio>
#include <utility>

namespace attnscope {
namespace {

const Stage* findStage(const AttentionTrace& t, const std::string& name) {
  for (const Stage& stage : t.stages)
    if (stage.name == name) return &stage;
  return nullptr;
}

PipelineStep fromStage(const AttentionTrace& t, const std::string& name, std::string arrow, std::string symbolic) {
  PipelineStep step{std::move(arrow), std::move(symbolic), {}, "", ""};
  if (const Stage* stage = findStage(t, name)) {
    step.shape = stage->shape;
    step.op = stage->op;
    step.code = stage->code;
  }
  return step;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// The RoPE box's arrow: a model layer's base and, when partial, the rotated features.
std::string ropeArrow(const LayerFacts* f) {
  if (!f) return "RoPE";
  std::string arrow = "RoPE base " + number(f->rope_base);
  if (f->rotary_dims < f->head_dim) arrow += ", " + std::to_string(f->rotary_dims) + "/" + std::to_string(f->head_dim) + " dims";
  return arrow;
}

// The q/k norm's box where this trace applies it: right after the projection (whole, OLMo 2)
// or after the view (per head, Qwen3 and Gemma 3).
void addNorm(const AttentionTrace& t, const std::string& p, bool whole, const std::string& symbolic,
             PipelineChain& chain) {
  const Stage* norm = findStage(t, p + "_norm");
  if (!norm || (norm->op == "rmsnorm (whole projection)") != whole) return;
  chain.steps.push_back(fromStage(t, p + "_norm", whole ? "RMSNorm (whole)" : "RMSNorm per head", symbolic));
}

PipelineChain projectionChain(const AttentionTrace& t, bool folded, char x, const char* len, const char* input_size,
                              const LayerFacts* facts) {
  const std::string p(1, x);
  PipelineChain chain{x == 'q' ? "Q" : x == 'k' ? "K" : "V", {}};
  const char* names[] = {x == 'q' ? "query" : x == 'k' ? "key" : "value"};
  // Grouped-query attention: K and V have G heads of their own until repeat_interleave.
  const std::string heads = x != 'q' && t.G != t.H ? "G" : "H";
  chain.steps.push_back(fromStage(t, names[0], "", std::string("[B, ") + len + ", " + input_size + "]"));
  chain.steps.push_back(fromStage(t, p + "_proj", p + "_proj", std::string("[B, ") + len + ", " + heads + "*d]"));
  if (folded) {
    const int64_t T = x == 'q' ? t.L : t.S;
    chain.steps.push_back({"transpose_qkv", std::string("[B*H, ") + len + ", d]", {t.B * t.H, T, t.d},
                           "reshape + permute(0, 2, 1, 3) + reshape",
                           p + " = transpose_qkv(self.W_" + p + "(" + (x == 'q' ? "queries" : x == 'k' ? "keys" : "values") +
                               "), self.num_heads)"});
    return chain;
  }
  addNorm(t, p, true, std::string("[B, ") + len + ", " + heads + "*d]", chain);
  chain.steps.push_back(fromStage(t, p + "_view", "view", std::string("[B, ") + len + ", " + heads + ", d]"));
  addNorm(t, p, false, std::string("[B, ") + len + ", " + heads + ", d]", chain);
  const std::string split = "[B, " + heads + ", " + len + ", d]";
  chain.steps.push_back(fromStage(t, p + "_transpose", "transpose(1,2)", split));
  if (findStage(t, p + "_rope")) chain.steps.push_back(fromStage(t, p + "_rope", ropeArrow(facts), split));
  if (x != 'v' && facts && facts->positions == LayerPositions::NoPe) {  // SmolLM3: this layer adds no positions
    PipelineStep nope = chain.steps.back();
    nope.arrow = "no positions (NoPE)";
    nope.op = "none";
    nope.code = "# NoPE layer: " + p + " is not rotated (no_rope_layers)";
    chain.steps.push_back(std::move(nope));
  }
  if (findStage(t, p + "_repeat"))
    chain.steps.push_back(fromStage(t, p + "_repeat", "repeat_interleave(H/G, dim=1)", std::string("[B, H, ") + len + ", d]"));
  return chain;
}

}  // namespace

std::vector<PipelineChain> pipelineChains(const AttentionTrace& t, bool folded, const LayerFacts* facts) {
  std::vector<PipelineChain> chains;
  chains.push_back(projectionChain(t, folded, 'q', "L", "Dq", facts));
  chains.push_back(projectionChain(t, folded, 'k', "S", "Dk", facts));
  chains.push_back(projectionChain(t, folded, 'v', "S", "Dv", facts));
  PipelineChain attention{"attention", {}};
  PipelineChain output{"output", {}};
  if (!folded) {
    attention.steps.push_back(fromStage(t, "scores", "Q K^T * scale", "[B, H, L, S]"));
    if (findStage(t, "softcap")) attention.steps.push_back(fromStage(t, "softcap", "soft-cap", "[B, H, L, S]"));
    if (findStage(t, "alibi")) attention.steps.push_back(fromStage(t, "alibi", "+ ALiBi", "[B, H, L, S]"));
    const bool sliding = facts && facts->sliding_window > 0;
    attention.steps.push_back(fromStage(
        t, "masked_scores", sliding ? "mask (window " + std::to_string(facts->sliding_window) + ")" : "mask", "[B, H, L, S]"));
    attention.steps.push_back(fromStage(t, "probs", "softmax", "[B, H, L, S]"));
    attention.steps.push_back(fromStage(t, "dropout", "dropout", "[B, H, L, S]"));
    output.steps.push_back(fromStage(t, "context_heads", "x V", "[B, H, L, d]"));
    output.steps.push_back(fromStage(t, "context_transpose", "transpose(1,2)", "[B, L, H, d]"));
    output.steps.push_back(fromStage(t, "context_view", "view", "[B, L, D]"));
    output.steps.push_back(fromStage(t, "output", "o_proj", "[B, L, D]"));
  } else {
    const Shape bh_ls{t.B * t.H, t.L, t.S};
    attention.steps.push_back({"Q K^T / sqrt(d)", "[B*H, L, S]", bh_ls, "bmm",
                               "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)"});
    attention.steps.push_back({"masked_softmax", "[B*H, L, S]", bh_ls, "softmax with valid_lens",
                               "valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"});
    attention.steps.push_back({"dropout", "[B*H, L, S]", bh_ls, "dropout",
                               "self.dropout(self.attention_weights)"});
    output.steps.push_back({"x V", "[B*H, L, d]", {t.B * t.H, t.L, t.d}, "bmm",
                            "output = torch.bmm(self.dropout(self.attention_weights), values)"});
    output.steps.push_back({"transpose_output", "[B, L, H*d]", {t.B, t.L, t.D},
                            "reshape + permute(0, 2, 1, 3) + reshape",
                            "output_concat = transpose_output(output, self.num_heads)"});
    output.steps.push_back(fromStage(t, "output", "W_o", "[B, L, D]"));
  }
  chains.push_back(std::move(attention));
  chains.push_back(std::move(output));
  return chains;
}

std::vector<std::string> layerFactLines(const LayerFacts& f) {
  std::vector<std::string> lines;
  lines.push_back("H=" + std::to_string(f.heads) + " query heads, G=" + std::to_string(f.kv_heads) +
                  " K/V heads, head_dim d=" + std::to_string(f.head_dim) +
                  (f.own_head_dim ? " (config head_dim, not hidden " + std::to_string(f.width) + " / H)" : ""));
  lines.push_back(f.sliding_window > 0 ? "window: sliding, " + std::to_string(f.sliding_window) + " keys (the query and " +
                                             std::to_string(f.window) + " before)"
                                       : "window: global (every earlier key)");
  if (f.positions == LayerPositions::Rope) {
    std::string rope = "positions: RoPE base " + number(f.rope_base) + " on " + std::to_string(f.rotary_dims) + " of " +
                       std::to_string(f.head_dim) + " features";
    if (f.rope_type != "default") rope += ", " + f.rope_type + " scaling";
    if (f.rope_attention_factor != 1.0) rope += ", cos and sin x " + number(f.rope_attention_factor);
    lines.push_back(rope);
  } else {
    lines.push_back(f.positions == LayerPositions::NoPe ? "positions: none (NoPE layer: q and k are not rotated)"
                                                        : "positions: added to the embeddings before layer 0");
  }
  if (f.qk_norm == QkNorm::PerHead) lines.push_back("q/k norm: RMSNorm over each head's d features, before RoPE");
  if (f.qk_norm == QkNorm::WholeProjection)
    lines.push_back("q/k norm: RMSNorm over the whole q and k projections, before the head split");
  if (f.softcap) lines.push_back("scores soft-capped at " + number(*f.softcap));
  return lines;
}

}  // namespace attnscope
