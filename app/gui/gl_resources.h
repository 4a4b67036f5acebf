// GL objects for heatmaps: the colormap shader program, the lookup textures, and the
// float textures that hold one trace. Needs a current GL 3.3 context.
#pragma once

#include <cstdint>
#include <string>

#include "gui/app_state.h"

namespace attnscope {

// Compiles the embedded heatmap shaders and builds one 256x1 LUT per Colormap.
// Returns "" on success, else the compile/link log.
std::string createGlResources(GlResources& gl);
void destroyGlResources(GlResources& gl);

// R32F texture [rows, cols] from row-major floats, nearest filtering, clamped edges.
unsigned int uploadFloatTexture(const float* values, int64_t rows, int64_t cols);

// (Re)builds state.textures from state.trace for settings.batch_item when either changed.
// Maps with more than 256 rows or columns are uploaded block-pooled to at most 256 per
// side (max for probabilities and masks, largest |v| for scores) so that peaks stay
// visible; the textures are then smaller than [L, S], and callers keep mapping the
// pointer to cells with the trace's L and S, never the texture size.
void updateTraceTextures(AppState& state);
void releaseTraceTextures(TraceTextures& textures);

// (Re)builds state.correct_textures from state.correct_trace the same way (probabilities
// only, pooled the same way).
void updateCorrectTextures(AppState& state);
void releaseCorrectTextures(CorrectTextures& textures);

}  // namespace attnscope
