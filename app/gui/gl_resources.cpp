#include "gui/gl_resources.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "view/colormap.h"
#include "view/downsample.h"

namespace attnscope {
namespace {

#include "embedded_shaders.inc"

GLuint compileShader(GLenum type, const char* source, std::string& log) {
  GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char buffer[2048];
    glGetShaderInfoLog(shader, sizeof buffer, nullptr, buffer);
    log += buffer;
  }
  return shader;
}

// A new 2D texture, left bound: nearest sampling (one texel per cell) and clamped edges.
GLuint createNearestTexture() {
  GLuint id = 0;
  glGenTextures(1, &id);
  glBindTexture(GL_TEXTURE_2D, id);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return id;
}

// Largest texture side uploaded for a map. The shader colours each pixel from the one
// texel under its centre, so any texel beyond one per pixel is never drawn and an
// isolated peak (an attention sink) can vanish. 256 is below the focus heatmaps' side
// on the default 1440x900 window (293 px), so there every pooled block gets a pixel;
// bigger windows draw blocks of several pixels and the tooltip still reads exact cells.
constexpr int64_t kMaxTextureSide = 256;

enum class Pooling {
  Max,     // probabilities and masks: a peak (or one allowed cell) keeps its block
  MaxAbs,  // scores, coloured on a diverging scale: the extreme of either sign wins
};

// values: [rows, cols], row-major, masked -inf. Uploads it as is when both sides fit in
// kMaxTextureSide, else block-pooled down to at most that per side. Called only when a
// trace or the batch item changes, never per frame.
unsigned int uploadMapTexture(const float* values, int64_t rows, int64_t cols, Pooling pooling) {
  const int64_t out_rows = std::min(rows, kMaxTextureSide), out_cols = std::min(cols, kMaxTextureSide);
  if (out_rows == rows && out_cols == cols) return uploadFloatTexture(values, rows, cols);
  const Tensor pooled = pooling == Pooling::Max ? maxPool2d(values, rows, cols, out_rows, out_cols)
                                                : maxAbsPool2d(values, rows, cols, out_rows, out_cols);
  return uploadFloatTexture(pooled.data.data(), out_rows, out_cols);  // [out_rows, out_cols]
}

void deleteTextures(std::vector<unsigned int>& ids) {
  if (!ids.empty()) glDeleteTextures(static_cast<GLsizei>(ids.size()), ids.data());
  ids.clear();
}

// Uploads every head's shown probabilities (after dropout when applied) for batch item b,
// masked cells -inf, and finds the largest and the smallest positive allowed value.
void uploadProbTextures(const AttentionTrace& trace, int64_t b, std::vector<unsigned int>& ids, float& max,
                        float& min_positive) {
  const int64_t H = trace.H, cells = trace.L * trace.S;
  const float masked = -std::numeric_limits<float>::infinity();
  const uint8_t* allowed = trace.mask.allowed.data.data() + b * cells;  // [L, S]
  const Tensor& shown = trace.probsAfterDropout();
  std::vector<float> buffer(static_cast<size_t>(cells));
  max = 0.0f;
  min_positive = std::numeric_limits<float>::infinity();
  for (int64_t h = 0; h < H; ++h) {
    const float* probs = shown.data.data() + (b * H + h) * cells;  // [L, S]
    for (int64_t c = 0; c < cells; ++c) {
      buffer[c] = allowed[c] ? probs[c] : masked;
      if (allowed[c]) {
        max = std::max(max, probs[c]);
        if (probs[c] > 0.0f) min_positive = std::min(min_positive, probs[c]);
      }
    }
    ids.push_back(uploadMapTexture(buffer.data(), trace.L, trace.S, Pooling::Max));
  }
  if (max <= 0.0f) max = 1.0f;
  if (!std::isfinite(min_positive)) min_positive = 1e-6f;
}

void releaseTraceTextures(TraceTextures& textures) {
  deleteTextures(textures.probs);
  deleteTextures(textures.scores);
  deleteTextures(textures.components);
  if (textures.mask) glDeleteTextures(1, &textures.mask);
  textures = TraceTextures{};
}

void releaseCorrectTextures(CorrectTextures& textures) {
  deleteTextures(textures.probs);
  textures = CorrectTextures{};
}

}  // namespace

std::string createGlResources(GlResources& gl) {
  std::string log;
  GLuint vert = compileShader(GL_VERTEX_SHADER, kShader_heatmap_vert, log);
  GLuint frag = compileShader(GL_FRAGMENT_SHADER, kShader_heatmap_frag, log);
  if (!log.empty()) return "heatmap shader: " + log;
  gl.heatmap_program = glCreateProgram();
  glAttachShader(gl.heatmap_program, vert);
  glAttachShader(gl.heatmap_program, frag);
  glLinkProgram(gl.heatmap_program);
  glDeleteShader(vert);
  glDeleteShader(frag);
  GLint ok = 0;
  glGetProgramiv(gl.heatmap_program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char buffer[2048];
    glGetProgramInfoLog(gl.heatmap_program, sizeof buffer, nullptr, buffer);
    return std::string("heatmap shader link: ") + buffer;
  }
  const GLuint p = gl.heatmap_program;
  gl.loc_projection = glGetUniformLocation(p, "projection");
  gl.loc_values = glGetUniformLocation(p, "values");
  gl.loc_colormap = glGetUniformLocation(p, "colormap");
  gl.loc_range_low = glGetUniformLocation(p, "range_low");
  gl.loc_range_high = glGetUniformLocation(p, "range_high");
  gl.loc_log_scale = glGetUniformLocation(p, "log_scale");
  gl.loc_masked_color = glGetUniformLocation(p, "masked_color");
  gl.loc_masked_hatch = glGetUniformLocation(p, "masked_hatch_color");

  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  for (Colormap map : allColormaps()) {
    const RgbTable& table = colormapTable(map);
    gl.colormap_luts[static_cast<int>(map)] = createNearestTexture();
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGB8, 256, 1, 0, GL_RGB, GL_UNSIGNED_BYTE, table.data());
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  return "";
}

void destroyGpuState(GpuState& gpu) {
  releaseTraceTextures(gpu.textures);
  releaseCorrectTextures(gpu.correct_textures);
  if (gpu.gl.heatmap_program) glDeleteProgram(gpu.gl.heatmap_program);
  glDeleteTextures(kColormapCount, gpu.gl.colormap_luts);
  gpu = GpuState{};
}

unsigned int uploadFloatTexture(const float* values, int64_t rows, int64_t cols) {
  const GLuint id = createNearestTexture();
  glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, static_cast<GLsizei>(cols), static_cast<GLsizei>(rows),
               0, GL_RED, GL_FLOAT, values);
  return id;
}

void updateTraceTextures(GpuState& gpu, const AttentionTrace* trace, int64_t b) {
  TraceTextures& tex = gpu.textures;
  if (!trace) {
    if (tex.source) releaseTraceTextures(tex);
    return;
  }
  b = std::clamp<int64_t>(b, 0, trace->B - 1);  // an older trace than the focus follows
  if (tex.source == trace && tex.batch_item == b) return;
  releaseTraceTextures(tex);
  tex.source = trace;
  tex.batch_item = b;

  const int64_t H = trace->H, L = trace->L, S = trace->S;
  const int64_t cells = L * S;
  const float masked = -std::numeric_limits<float>::infinity();
  const uint8_t* allowed = trace->mask.allowed.data.data() + b * cells;  // [L, S]
  uploadProbTextures(*trace, b, tex.probs, tex.prob_max, tex.prob_min_positive);

  std::vector<float> buffer(static_cast<size_t>(cells));
  for (int64_t h = 0; h < H; ++h) {
    const float* scores = trace->scores.data.data() + (b * H + h) * cells;  // [L, S]
    float abs_max = 0.0f;
    for (int64_t c = 0; c < cells; ++c) {
      buffer[c] = allowed[c] ? scores[c] : masked;
      if (allowed[c] && std::isfinite(scores[c])) abs_max = std::max(abs_max, std::fabs(scores[c]));
    }
    tex.scores.push_back(uploadMapTexture(buffer.data(), L, S, Pooling::MaxAbs));
    tex.score_abs_max.push_back(abs_max > 0.0f ? abs_max : 1.0f);
  }

  tex.allowed_cells = 0;
  for (int64_t c = 0; c < cells; ++c) {
    buffer[c] = allowed[c] ? 1.0f : masked;
    tex.allowed_cells += allowed[c];
  }
  tex.mask = uploadMapTexture(buffer.data(), L, S, Pooling::Max);
  tex.fully_masked_rows = 0;
  for (int64_t i = 0; i < L; ++i) tex.fully_masked_rows += trace->fully_masked.data[b * L + i];

  for (const MaskComponent& component : trace->mask.components) {
    const uint8_t* part = component.allowed.data.data() + b * cells;  // [L, S]
    int64_t count = 0;
    for (int64_t c = 0; c < cells; ++c) {
      buffer[c] = part[c] ? 1.0f : masked;
      count += part[c];
    }
    tex.components.push_back(uploadMapTexture(buffer.data(), L, S, Pooling::Max));
    tex.component_allowed.push_back(count);
  }
}

void updateCorrectTextures(GpuState& gpu, const AttentionTrace* trace, int64_t b) {
  CorrectTextures& tex = gpu.correct_textures;
  if (!trace) {
    if (tex.source) releaseCorrectTextures(tex);
    return;
  }
  b = std::clamp<int64_t>(b, 0, trace->B - 1);
  if (tex.source == trace && tex.batch_item == b) return;
  releaseCorrectTextures(tex);
  tex.source = trace;
  tex.batch_item = b;
  uploadProbTextures(*trace, b, tex.probs, tex.prob_max, tex.prob_min_positive);
}

}  // namespace attnscope
