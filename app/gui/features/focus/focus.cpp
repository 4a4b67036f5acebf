#include "gui/features/focus/focus.h"

#include <algorithm>

#include "gui/render/token_text.h"
#include "gui/shell/app_state.h"

namespace attnscope {

int focusMapCount(const AppState& state) {
  return state.compute.view && state.compute.correctView() && state.compute.error().empty() ? 3 : 2;
}

void updateZoomView(AppState& state) {
  ZoomTileState& z = state.feature<ZoomTileState>();
  const ViewModel* v = state.compute.view.get();
  TileRequest want;
  if (v && v->tiled && !state.view.zoom.whole()) {
    want.maps = v->tiled;
    want.layer = std::clamp<int64_t>(state.view.focus.layer, 0, v->layers - 1);
    want.b = std::clamp<int64_t>(state.view.focus.batch_item, 0, v->B - 1);
    want.h = std::clamp<int64_t>(state.view.focus.head, 0, v->H - 1);
    want.window = resolveWindow(state.view.zoom, v->mapL(), v->mapS());
  }
  if (want != z.posted) {
    z.posted = want;
    if (want.maps && !z.worker) z.worker = std::make_unique<TileWorker>();  // started on first use
    if (want.maps) z.worker->post(want);
    else z.tile.reset();  // not zoomed (or no tiled source): nothing to keep alive
    markStateChanged(state);
  }
  if (std::shared_ptr<const WindowTile> tile = z.worker ? z.worker->poll() : nullptr) {
    if (z.posted.maps) z.tile = std::move(tile);
    markStateChanged(state);
  }
  if (updateZoomTextures(state.gpu.zoom, v, state.compute.correctView().get(), state.view.focus, state.view.zoom, z.ready()))
    ++state.gpu.texture_generation;
}

bool zoomTilePending(const AppState& state) { return state.feature<ZoomTileState>().pending(); }

namespace {

// The focused map's numbers at the hovered cell, from the view model the tooltip reads.
void hoverJson(const AppState& state, nlohmann::json& line) {
  line["hover"] = {state.view.hover.row, state.view.hover.col};
  line["hover_prob"] = nullptr;
  line["hover_score"] = nullptr;
  line["hover_tokens"] = nullptr;  // [query, key] as the tooltip writes them (visibleToken)
  line["hover_pieces"] = nullptr;  // [query, key] raw piece and id lines of the tooltip ("" = none)
  const ViewFocus& f = state.view.focus;
  const int64_t b = state.gpu.textures.batch_item;
  const ViewModel* shown = shownView(state);
  const HoverCell& hover = state.view.hover;
  if (!shown || !hover.valid() || hover.row >= shown->L || hover.col >= shown->S || f.layer >= shown->layers ||
      b >= shown->B || f.head >= shown->H || b < 0)
    return;
  const int64_t cell = hover.row * shown->S + hover.col;
  line["hover_tokens"] = {visibleToken(shown->query_tokens[b][hover.row]), visibleToken(shown->key_tokens[b][hover.col])};
  line["hover_pieces"] = {pieceNote(shown->query_pieces, b, hover.row), pieceNote(shown->key_pieces, b, hover.col)};
  line["hover_prob"] = shown->probs(f.layer, b, f.head)[cell];
  if (const float* scores = shown->scores(f.layer, b, f.head)) {
    if (shown->isAllowed(f.layer, b, hover.row, hover.col)) line["hover_score"] = scores[cell];
  }
}

// A tiled source: the real map, its overview, the zoomed window's tile and the exact values
// at the hovered real cell (when that tile has them).
void tiledJson(const AppState& state, nlohmann::json& line) {
  const ViewModel* v = state.compute.view.get();
  line["tiled"] = nullptr;
  if (v && v->tiled) {
    const TiledMaps& m = *v->tiled;
    line["tiled"] = {{"L", m.L}, {"S", m.S}, {"rows", m.rows}, {"cols", m.cols}, {"note", state.script.focus_note}};
  }
  line["zoom_tile"] = nullptr;
  if (const std::shared_ptr<const WindowTile>& tile = state.feature<ZoomTileState>().tile) {
    const CellWindow& w = tile->request.window;
    line["zoom_tile"] = {{"b", tile->request.b}, {"h", tile->request.h}, {"window", {w.row0, w.rows, w.col0, w.cols}},
                         {"exact", tile->exact}, {"ms", tile->milliseconds}, {"error", tile->error},
                         {"pending", state.feature<ZoomTileState>().pending()}};
  }
  line["map_hover"] = {state.view.map_hover.row, state.view.map_hover.col};
  line["hover_exact"] = nullptr;
  float prob = 0.0f, score = 0.0f;
  bool allowed = false;
  if (const WindowTile* tile = state.feature<ZoomTileState>().ready();
      tile && state.view.map_hover.valid() &&
      tile->exactCell(state.view.map_hover.row, state.view.map_hover.col, &prob, &score, &allowed)) {
    line["hover_exact"] = {{"prob", prob}, {"score", allowed ? nlohmann::json(score) : nlohmann::json()}, {"allowed", allowed}};
  }
}

}  // namespace

const HeadNote* featuredHead(const ViewModel& view) {
  for (const HeadNote& note : view.notable_heads)
    if (note.pattern == "induction") return &note;
  return view.notable_heads.empty() ? nullptr : &view.notable_heads.front();  // best score first
}

void focusFeaturedHead(AppState& state) {
  const ViewModel* v = state.compute.view.get();
  if (!state.view.focus_featured_head || !v) return;
  state.view.focus_featured_head = false;
  if (v->source != ViewSource::ModelRun) return;
  if (const HeadNote* note = featuredHead(*v)) setFocus(state, ViewFocus{note->layer, note->head, 0});
}

void followResultInFocus(AppState& state) {
  focusFeaturedHead(state);         // a first start: the head the caption talks about
  setZoom(state, state.view.zoom);  // a smaller map: the window moves inside it
}

void focusToJson(const AppState& state, nlohmann::json& line) {
  line["focused_layer"] = state.view.focus.layer;
  line["focused_head"] = state.view.focus.head;
  line["batch_item"] = state.gpu.textures.batch_item;
  line["selected_view"] = mapKindName(state.view.map_kind);
  line["focus_tab"] = focusTabName(state.view.tab);
  hoverJson(state, line);
  tiledJson(state, line);
  // The focus view's visible window [row0, rows, col0, cols] and the labels drawn on its axes.
  const ViewModel* v = state.compute.view.get();
  const CellWindow zoom = v ? resolveWindow(state.view.zoom, v->mapL(), v->mapS()) : CellWindow{};
  line["zoom_window"] = {zoom.row0, zoom.rows, zoom.col0, zoom.cols};
  line["zoomed"] = !state.view.zoom.whole();
  const FocusAxisDrawn& axis = state.script.focus_axis;
  line["focus_axis"] = {{"rows", {axis.first_row, axis.last_row}}, {"cols", {axis.first_col, axis.last_col}}};
  line["zoom_textures_built"] = state.gpu.zoom.rebuilds;
  // Characters of the shown item's labels and raw pieces (the tooltip's) that the font atlas
  // cannot draw ("U+0915").
  line["label_glyphs_missing"] = nlohmann::json::array();
  const int64_t b = state.gpu.textures.batch_item;
  if (v && b >= 0 && b < v->B) {
    std::vector<std::string> labels = v->query_tokens[b];
    labels.insert(labels.end(), v->key_tokens[b].begin(), v->key_tokens[b].end());
    for (const auto* pieces : {&v->query_pieces, &v->key_pieces})
      if (b < static_cast<int64_t>(pieces->size()))
        for (const TokenPiece& piece : (*pieces)[b]) labels.push_back(piece.raw);
    line["label_glyphs_missing"] = missingGlyphs(labels);
  }
}

}  // namespace attnscope
