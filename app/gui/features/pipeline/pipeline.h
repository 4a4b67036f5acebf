// The shape pipeline: every stage of the trace with live shapes and the PyTorch line behind it.
#pragma once

#include <nlohmann/json.hpp>

namespace attnscope {

struct AppState;

void drawPipelinePanel(AppState& state);
// State-log key pipeline: {layer (a model run's focused layer, else null), facts (that layer's
// LayerFacts: heads, kv_heads, head_dim, own_head_dim, window, sliding_window, positions
// "added" / "rope" / "nope", rope_base, rotary_dims, rope_type, qk_norm "none" / "per_head" /
// "whole_projection", softcap, lines as drawn; null for other sources), chains ({"Q": [{arrow,
// shape}], "K", "V", "attention", "output"}: the boxes as drawn; {} without a trace)}.
void pipelineToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
