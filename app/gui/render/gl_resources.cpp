#include "gui/render/gl_resources.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "view/colormap.h"

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

// values: [rows, cols] row-major, masked -inf, already at most kTextureMaxSide per side.
unsigned int uploadMap(const PooledMap& map) { return uploadFloatTexture(map.values.data(), map.rows, map.cols); }

void deleteTextures(std::vector<unsigned int>& ids) {
  if (!ids.empty()) glDeleteTextures(static_cast<GLsizei>(ids.size()), ids.data());
  ids.clear();
}

void releaseViewTextures(ViewTextures& textures) {
  deleteTextures(textures.probs);
  deleteTextures(textures.scores);
  deleteTextures(textures.masks);
  for (std::vector<unsigned int>& ids : textures.components) deleteTextures(ids);
  for (ViewTextures::AcrossLayers& maps : textures.across) deleteTextures(maps.maps);
  textures = ViewTextures{};
}

void releaseZoomTextures(ZoomTextures& zoom) {
  for (unsigned int* id : {&zoom.probs, &zoom.scores, &zoom.correct_probs}) {
    if (*id) glDeleteTextures(1, id);
    *id = 0;
  }
  zoom.source = zoom.correct_source = 0;
  zoom.tile_maps = nullptr;
  zoom.window = {};
}

// The mask of one layer for batch item b: the combined mask's texture and counts, and each
// component of the layer's core trace (when it came from one), all prepared by the view
// model off the UI thread.
void uploadLayerMask(ViewTextures& tex, const ViewModel& view, int64_t layer, int64_t b) {
  const size_t at = static_cast<size_t>(layer * view.B + b);  // [layers, B]
  tex.masks.push_back(uploadMap(view.textureMap(MapKind::Mask, layer, b, 0)));
  tex.allowed_cells.push_back(view.allowed_counts.at(at));
  tex.fully_masked_rows.push_back(view.fully_masked_counts.at(at));
  std::vector<unsigned int>& ids = tex.components.emplace_back();
  std::vector<int64_t>& counts = tex.component_allowed.emplace_back();
  for (const ComponentMap& component : view.component_maps.at(at)) {
    ids.push_back(uploadMap(component.map));
    counts.push_back(component.allowed_cells);
  }
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
  releaseZoomTextures(gpu.zoom);
  releaseViewTextures(gpu.textures);
  releaseViewTextures(gpu.correct_textures);
  releaseViewTextures(gpu.variant_textures);
  if (gpu.compare_diff) glDeleteTextures(1, &gpu.compare_diff);
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

const ViewTextures::AcrossLayers* ViewTextures::acrossLayers(MapKind kind) const {
  for (const AcrossLayers& maps : across)
    if (maps.kind == kind) return &maps;
  return nullptr;
}

bool updateViewTextures(ViewTextures& tex, const ViewModel* view, int64_t b) {
  if (!view) {
    if (!tex.source) return false;
    releaseViewTextures(tex);
    return true;
  }
  b = std::clamp<int64_t>(b, 0, view->B - 1);  // an older view than the focus follows
  if (tex.builtFrom(view) && tex.batch_item == b) return false;
  releaseViewTextures(tex);
  tex.source = view->stamp.value();
  tex.batch_item = b;
  tex.layers = view->layers;
  tex.heads = view->H;

  for (int64_t l = 0; l < view->layers; ++l) {
    for (int64_t h = 0; h < view->H; ++h) {
      tex.probs.push_back(uploadMap(view->textureMap(MapKind::Probs, l, b, h)));
      if (!view->hasScores()) continue;
      tex.scores.push_back(0);
      tex.score_abs_max.push_back(1.0f);  // measured with the upload
    }
    if (view->hasMask()) uploadLayerMask(tex, *view, l, b);
  }
  for (const auto& built : view->across_layers) {
    ViewTextures::AcrossLayers& across = tex.across.emplace_back();
    across.kind = built->kind;
    across.max_all = 0.0f;
    for (int64_t l = 0; l < view->layers; ++l) {
      across.maps.push_back(uploadMap(view->textureMap(built->kind, l, b, 0)));
      across.max.push_back(built->ranges[static_cast<size_t>(l * view->B + b)].max);
      across.max_all = std::max(across.max_all, across.max.back());
    }
  }
  const MapRange range = view->probsRangeOver(b);  // one colour scale for every tile
  tex.prob_max = range.max > 0.0f ? range.max : 1.0f;
  tex.prob_min_positive = std::isfinite(range.min_positive) ? range.min_positive : 1e-6f;
  return true;
}

bool uploadFocusedScores(ViewTextures& tex, const ViewModel* view, ViewFocus focus) {
  if (!tex.builtFrom(view) || tex.scores.empty()) return false;
  const int64_t layer = std::clamp<int64_t>(focus.layer, 0, tex.layers - 1), h = std::clamp<int64_t>(focus.head, 0, tex.heads - 1);
  unsigned int& id = tex.scores[tex.index(layer, h)];
  if (id != 0) return false;
  id = uploadMap(view->textureMap(MapKind::Scores, layer, tex.batch_item, h));
  const float abs_max = view->scoresRange(layer, tex.batch_item, h).abs_max;
  tex.score_abs_max[tex.index(layer, h)] = abs_max > 0.0f ? abs_max : 1.0f;
  return true;
}

bool updateZoomTextures(ZoomTextures& zoom, const ViewModel* view, const ViewModel* correct, ViewFocus focus,
                        const CellWindow& window, const WindowTile* tile) {
  if (window.whole() || (!view && !correct) || (view && view->tiled && !tile)) {
    if (!zoom.probs && !zoom.scores && !zoom.correct_probs) return false;
    releaseZoomTextures(zoom);
    return true;
  }
  if (view && view->tiled) {
    const TileRequest& r = tile->request;
    if (zoom.source == view->stamp.value() && zoom.tile_maps == r.maps.get() && zoom.focus == ViewFocus{r.layer, r.h, r.b} &&
        zoom.window == r.window)
      return false;  // the same window of the same maps: the same values
    const int64_t rebuilds = zoom.rebuilds;
    releaseZoomTextures(zoom);
    zoom.rebuilds = rebuilds + 1;
    zoom.source = view->stamp.value();
    zoom.tile_maps = r.maps.get();
    zoom.focus = ViewFocus{r.layer, r.h, r.b};
    zoom.window = r.window;
    zoom.probs = uploadMap(textureOfMap(tile->probs.data.data(), tile->allowed.data.data(), tile->rows, tile->cols,
                                        MapKind::Probs));
    zoom.scores = uploadMap(textureOfMap(tile->scores.data.data(), tile->allowed.data.data(), tile->rows,
                                         tile->cols, MapKind::Scores));
    return true;
  }
  const uint64_t view_stamp = view ? view->stamp.value() : 0, correct_stamp = correct ? correct->stamp.value() : 0;
  if (zoom.source == view_stamp && zoom.correct_source == correct_stamp && zoom.focus == focus && zoom.window == window)
    return false;
  const int64_t rebuilds = zoom.rebuilds;
  releaseZoomTextures(zoom);
  zoom.rebuilds = rebuilds + 1;
  zoom.source = view_stamp;
  zoom.correct_source = correct_stamp;
  zoom.focus = focus;
  zoom.window = window;
  // A view older than the focus (or with fewer layers) is clamped as updateViewTextures does.
  auto upload = [&](const ViewModel& v, MapKind kind, int64_t layer) {
    const int64_t l = std::clamp<int64_t>(layer, 0, v.layers - 1);
    const int64_t b = std::clamp<int64_t>(focus.batch_item, 0, v.B - 1);
    const int64_t h = std::clamp<int64_t>(focus.head, 0, v.H - 1);
    return uploadMap(v.windowMap(kind, l, b, h, clampWindow(window, v.L, v.S)));
  };
  if (view) {
    zoom.probs = upload(*view, MapKind::Probs, focus.layer);
    if (view->hasScores()) zoom.scores = upload(*view, MapKind::Scores, focus.layer);
  }
  if (correct) zoom.correct_probs = upload(*correct, MapKind::Probs, 0);
  return true;
}

}  // namespace attnscope
