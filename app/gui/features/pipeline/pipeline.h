// The shape pipeline: every stage of the trace with live shapes and the PyTorch line behind it.
#pragma once

namespace attnscope {

struct AppState;

void drawPipelinePanel(AppState& state);

}  // namespace attnscope
