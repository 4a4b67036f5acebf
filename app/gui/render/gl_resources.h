// GPU state: the colormap shader program, the lookup textures, and the float textures that
// hold one result. Needs a current GL 3.3 context. GLuint == unsigned int (no GL header here).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "view/colormap.h"
#include "gui/render/redraw.h"
#include "gui/jobs/tile_worker.h"
#include "view/view_model.h"

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

// GPU copies of one view model for one batch item: every (layer, head) map, uploaded from
// the view model's texture maps (its pooled copies for maps larger than kTextureMaxSide,
// built off the UI thread). Rebuilt only when a new view model arrives or the batch item
// changes, never per frame. Masked cells are -inf in every texture.
struct ViewTextures {
  uint64_t source = 0;                      // the view model these were built from (its stamp; 0 = none)
  int64_t batch_item = -1;
  int64_t layers = 0, heads = 0;
  std::vector<unsigned int> probs;          // [layers, H]: R32F probabilities shown
  std::vector<unsigned int> scores;         // [layers, H]: R32F scaled scores, 0 until focused
                                            // (uploadFocusedScores); empty without scores
  std::vector<float> score_abs_max;         // [layers, H]: max |finite allowed score|, set with the upload
  float prob_max = 1.0f;                    // largest shown probability, every layer and head
  float prob_min_positive = 1e-6f;          // smallest positive one (log scale floor)
  // Masks, where the source has them (empty for imported maps):
  std::vector<unsigned int> masks;          // [layers]: R32F 1 allowed, -inf blocked
  std::vector<int64_t> allowed_cells;       // [layers]: combined mask, this batch item
  std::vector<int64_t> fully_masked_rows;   // [layers]
  std::vector<std::vector<unsigned int>> components;       // [layers][component], same encoding
  std::vector<std::vector<int64_t>> component_allowed;     // [layers][component]

  // Rollout and flow, once the view has them: one R32F map per layer, and the largest
  // value over every layer (the grid's shared scale).
  struct AcrossLayers {
    MapKind kind = MapKind::Rollout;
    std::vector<unsigned int> maps;  // [layers]
    std::vector<float> max;          // [layers] largest value of each map
    float max_all = 1.0f;
  };
  std::vector<AcrossLayers> across;  // one per kind the view has built

  size_t index(int64_t layer, int64_t h) const { return static_cast<size_t>(layer * heads + h); }
  bool builtFrom(const ViewModel* view) const { return view && source == view->stamp.value(); }
  bool hasMask() const { return !masks.empty(); }
  const AcrossLayers* acrossLayers(MapKind kind) const;  // null when not built
};

// The focused maps' zoomed window (exact cells up to kTextureMaxSide per side, pooled
// beyond): rebuilt when the window, the focused map or the result changes, never per frame.
// Unused (0) while the focus view is not zoomed.
struct ZoomTextures {
  uint64_t source = 0;  // stamps of the view models (0 = none)
  // A tiled source: window of map (focus.layer, focus.batch_item, focus.head) of these maps (those of the
  // view `source` stamps: the stamp is compared first).
  const TiledMaps* tile_maps = nullptr;
  uint64_t correct_source = 0;
  ViewFocus focus;
  CellWindow window;
  unsigned int probs = 0, scores = 0, correct_probs = 0;  // R32F windows, as ViewTextures
  int64_t rebuilds = 0;                                    // how often (state log)
};

struct GpuState {
  GlResources gl;
  ViewTextures textures;          // the latest result
  ViewTextures correct_textures;  // the mistakes lab's correct run
  ViewTextures variant_textures;  // the compare view's settings variant (a pick's `with`)
  ZoomTextures zoom;              // the focus view's zoomed window
  unsigned int compare_diff = 0;  // the compare view's A - B (R32F, pooled when large; 0 = none)
  std::deque<HeatmapDrawParams> draw_params;  // cleared after each rendered frame
  // Bumped whenever textures are made or deleted: GL reuses ids, so the redraw cache cannot
  // tell a new texture by its id and redraws the whole window.
  uint64_t texture_generation = 0;
  RedrawCache redraw;
};

// Compiles the embedded heatmap shaders and builds one 256x1 LUT per Colormap.
// Returns "" on success, else the compile/link log.
std::string createGlResources(GlResources& gl);
// Deletes every GL object of gpu (window shutdown).
void destroyGpuState(GpuState& gpu);

// R32F texture [rows, cols] from row-major floats, nearest filtering, clamped edges.
unsigned int uploadFloatTexture(const float* values, int64_t rows, int64_t cols);

// (Re)builds textures from view for batch item b when either changed (null view: released);
// true when it did.
// Textures are never larger than kTextureMaxSide per side; callers keep mapping the
// pointer to cells with the view's L and S, never the texture size.
bool updateViewTextures(ViewTextures& textures, const ViewModel* view, int64_t b);
// The focused head's scores texture of the view the textures were built from, once (only the
// focus view draws scores: the others wait until they are focused). True when it uploaded.
bool uploadFocusedScores(ViewTextures& textures, const ViewModel* view, ViewFocus focus);

// (Re)builds the zoomed window of the focused (layer, head, batch item) of view and of
// correct (the mistakes lab's run; may be null) when any of them changed; a whole()
// window releases them. A tiled view's window is `tile` (computed by the tile worker;
// null while it computes: no zoom textures). True when they were rebuilt or released.
bool updateZoomTextures(ZoomTextures& zoom, const ViewModel* view, const ViewModel* correct, ViewFocus focus,
                        const CellWindow& window, const WindowTile* tile);

}  // namespace attnscope
