// The focus view: the focused (layer, head) as scores beside probabilities (or the chosen
// map kind), zoom and pan, and for a tiled source the exact tile of the zoomed window.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "gui/jobs/tile_worker.h"
#include "view/view_model.h"
#include "view/zoom.h"

namespace attnscope {

struct AppState;
struct ColumnSpace;
struct ComputeAsk;

// The zoomed focus view of a tiled source: the window asked for last and the newest tile.
struct ZoomTileState {
  std::unique_ptr<TileWorker> worker;
  TileRequest posted;                      // maps null: nothing asked for
  std::shared_ptr<const WindowTile> tile;  // the newest result (may be an older request's)
  bool pending() const { return posted.maps && (!tile || tile->request != posted); }
  // The tile of the window asked for last; null while it computes or when it failed.
  const WindowTile* ready() const { return posted.maps && !pending() && tile->error.empty() ? tile.get() : nullptr; }
};

// Before each frame: a tiled source zoomed in the focus view asks for the visible window's
// tile when the window, the focused map or the result changed, and takes the newest tile;
// the zoomed maps' textures follow.
void updateZoomView(AppState& state);
bool zoomTilePending(const AppState& state);
// Heatmaps side by side in the focus view: 3 when a teaching mistake's buggy and correct
// probabilities are both shown (beside the scores), else 2.
int focusMapCount(const AppState& state);
// The head a trained model's caption features: its induction head when training.json names
// one, else its best-scoring notable head; null when it names none.
const HeadNote* featuredHead(const ViewModel& view);
// After a result arrives on a first start (ViewState::focus_featured_head): a model run's
// featured head gets the focus, once; any other first result ends the wait.
void focusFeaturedHead(AppState& state);
// A new result: the featured head on a first start, and the zoom window moved inside a smaller map.
void followResultInFocus(AppState& state);
// Its band's height (a place in the registry): what the head grid above leaves, the dragged
// ViewState::panel_sizes.grid, else the height its square maps need.
float focusHeight(const AppState& state, const ColumnSpace& space);
void drawFocusPanel(AppState& state);
// State-log keys: focused_layer, focused_head, batch_item, selected_view, focus_tab, hover, hover_prob, hover_score, map_hover, hover_exact, tiled, zoom_tile, zoom_window, zoomed, focus_axis, zoom_textures_built.
void focusToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
