// GPU state: the colormap shader program, the lookup textures, and the float textures that
// hold one result. Needs a current GL 3.3 context. GLuint == unsigned int (no GL header here).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "view/colormap.h"

namespace attnscope {

// GL objects that live as long as the window.
struct GlResources {
  unsigned int heatmap_program = 0;
  int loc_projection = -1, loc_values = -1, loc_colormap = -1, loc_range_low = -1,
      loc_range_high = -1, loc_log_scale = -1, loc_masked_color = -1, loc_masked_hatch = -1;
  unsigned int colormap_luts[kColormapCount] = {};  // 256x1 RGB8, indexed by Colormap
};

// What the heatmap shader needs for one draw; lives until the frame is rendered.
struct HeatmapDrawParams {
  const GlResources* gl = nullptr;
  unsigned int lut = 0;
  float range_low = 0, range_high = 1;  // log10 units when log_scale
  bool log_scale = false;
};

// GPU copies of the current trace for one batch item; rebuilt only when a new trace
// arrives or the batch item changes. Masked cells are -inf in every texture.
struct TraceTextures {
  const AttentionTrace* source = nullptr;  // the trace these were built from
  int64_t batch_item = -1;
  std::vector<unsigned int> probs;         // per head: R32F [L, S] probabilities shown
  std::vector<unsigned int> scores;        // per head: R32F [L, S] scaled scores
  unsigned int mask = 0;                   // R32F [L, S]: 1 allowed, -inf blocked
  std::vector<unsigned int> components;    // per mask component, same encoding
  float prob_max = 1.0f;                   // largest shown probability over all heads
  float prob_min_positive = 1e-6f;         // smallest positive one (log scale floor)
  std::vector<float> score_abs_max;        // per head: max |finite allowed score|
  int64_t allowed_cells = 0;               // combined mask, this batch item
  int64_t fully_masked_rows = 0;
  std::vector<int64_t> component_allowed;  // per component
};

// GPU copies of the mistakes lab's correct trace: probabilities only, same rules as
// TraceTextures (rebuilt only when a new correct trace arrives or the batch item changes).
struct CorrectTextures {
  const AttentionTrace* source = nullptr;
  int64_t batch_item = -1;
  std::vector<unsigned int> probs;  // per head: R32F [L, S] shown probabilities, masked -inf
  float prob_max = 1.0f;
  float prob_min_positive = 1e-6f;
};

struct GpuState {
  GlResources gl;
  TraceTextures textures;
  CorrectTextures correct_textures;
  std::deque<HeatmapDrawParams> draw_params;  // cleared after each rendered frame
};

// Compiles the embedded heatmap shaders and builds one 256x1 LUT per Colormap.
// Returns "" on success, else the compile/link log.
std::string createGlResources(GlResources& gl);
// Deletes every GL object of gpu (window shutdown).
void destroyGpuState(GpuState& gpu);

// R32F texture [rows, cols] from row-major floats, nearest filtering, clamped edges.
unsigned int uploadFloatTexture(const float* values, int64_t rows, int64_t cols);

// (Re)builds gpu.textures from trace for batch item b when either changed (null trace:
// released). Maps with more than 256 rows or columns are uploaded block-pooled to at most
// 256 per side (max for probabilities and masks, largest |v| for scores) so that peaks stay
// visible; the textures are then smaller than [L, S], and callers keep mapping the
// pointer to cells with the trace's L and S, never the texture size.
void updateTraceTextures(GpuState& gpu, const AttentionTrace* trace, int64_t b);

// (Re)builds gpu.correct_textures from the mistakes lab's correct trace the same way
// (probabilities only, pooled the same way).
void updateCorrectTextures(GpuState& gpu, const AttentionTrace* trace, int64_t b);

}  // namespace attnscope
