// The focused (layer, head): scaled scores (diverging, centred at 0) beside probabilities,
// token labels on both axes, colour bars, a hover tooltip and the fully-masked-row marks.
// Imported maps have probabilities only; their tooltip gives the exact stored value.
// With a teaching mistake, the correct run's probabilities sit right of the buggy ones on
// one shared colour scale, with the largest |difference| underneath.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gui/features/focus/focus.h"
#include "gui/features/focus/layer_maps.h"
#include "gui/jobs/export_jobs.h"
#include "gui/render/heatmap_widget.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

// A right-click on a model's map cell (query i, key j) offers its knockout: for this head or
// every head of its layer (an intervention: settings model_knockout). One menu per map (map:
// its layout name), so that only the clicked one opens.
void drawKnockoutMenu(AppState& state, const HeatmapHit& hit, const std::string& map, int64_t layer, int64_t head) {
  const std::string menu = "knockout_menu_" + map;
  if (hit.hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    state.view.knockout_cell = {hit.row, hit.col};
    ImGui::OpenPopup(menu.c_str());
  }
  if (!ImGui::BeginPopup(menu.c_str())) return;
  const auto [query, key] = state.view.knockout_cell;
  state.script.layout.recordWindow("knockout_menu");
  ImGui::Text("query %lld -> key %lld", static_cast<long long>(query), static_cast<long long>(key));
  for (const bool whole_layer : {false, true}) {
    const std::string label = whole_layer ? "knock out for every head of layer " + std::to_string(layer)
                                          : "knock out for L" + std::to_string(layer) + "H" + std::to_string(head);
    if (!ui::selectable(state.script.layout, whole_layer ? "knockout_layer" : "knockout_head", label.c_str(), false))
      continue;
    Interventions in = parseInterventions(state.settings.model_ablate, state.settings.model_knockout);
    in.knockouts.push_back({layer, whole_layer ? -1 : head, query, key, ""});
    setModelInterventions(state, in);
  }
  ImGui::EndPopup();
}

// The hovered cell's query and key: label and position, each followed by its raw piece and
// id where the view has them (Hugging Face tokenizers, bundles with tokens.json).
void drawTokenLines(const ViewModel& v, int64_t b, int64_t i, int64_t j, const std::vector<std::string>& q_tokens,
                    const std::vector<std::string>& k_tokens) {
  ImGui::Text("query  %s  (i = %lld)", visibleToken(q_tokens[i]).c_str(), static_cast<long long>(i));
  const std::string q_piece = pieceNote(v.query_pieces, b, i);
  if (!q_piece.empty()) ImGui::TextDisabled("       %s", q_piece.c_str());
  ImGui::Text("key    %s  (j = %lld)", visibleToken(k_tokens[j]).c_str(), static_cast<long long>(j));
  const std::string k_piece = pieceNote(v.key_pieces, b, j);
  if (!k_piece.empty()) ImGui::TextDisabled("       %s", k_piece.c_str());
}

// Core trace cells: raw and scaled score, mask, probability (and after dropout).
void drawTraceCellTooltip(const ViewModel& v, const AttentionTrace& t, int64_t b, int64_t h, int64_t i, int64_t j,
                          const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens,
                          const char* heading) {
  const size_t cell = static_cast<size_t>(((b * t.H + h) * t.L + i) * t.S + j);  // [B, H, L, S]
  const bool allowed = t.mask.allowed.data[(b * t.L + i) * t.S + j] != 0;          // [B, L, S]
  const bool row_masked = t.fully_masked.data[b * t.L + i] != 0;                  // [B, L]
  ImGui::BeginTooltip();
  if (heading) ImGui::TextDisabled("%s", heading);
  drawTokenLines(v, b, i, j, q_tokens, k_tokens);
  ImGui::Separator();
  ImGui::Text("raw score  q.k     %.5g", rawScore(t, b, h, i, j));
  if (allowed) {
    ImGui::Text("scaled score (x%.4g) %.5g", t.scale, t.scores.data[cell]);
  } else {
    ImGui::Text("scaled score       %s (masked)", t.fill == MaskFill::NegInf ? "-inf" : "-1e9");
  }
  ImGui::Text("masked             %s", allowed ? "no" : "yes");
  ImGui::Text("probability        %.5g", t.probs.data[cell]);
  if (t.dropout_applied) ImGui::Text("after dropout      %.5g", t.probs_dropped.data[cell]);
  if (row_masked) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.45f, 1.0f));
    ImGui::TextUnformatted("every key of this query is masked: PyTorch returns NaN here");
    ImGui::PopStyleColor();
  }
  ImGui::EndTooltip();
}

// Imported cells: the stored probability, exactly (9 significant digits round-trip a float),
// and whether the bundle's padding masks the cell.
void drawImportedCellTooltip(const ViewModel& view, int64_t layer, int64_t b, int64_t h, int64_t i, int64_t j,
                             const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens) {
  ImGui::BeginTooltip();
  ImGui::TextDisabled("%s, head %lld (imported)", view.maps[layer].name.c_str(), static_cast<long long>(h));
  drawTokenLines(view, b, i, j, q_tokens, k_tokens);
  ImGui::Separator();
  ImGui::Text("probability        %.9g", view.probs(layer, b, h)[i * view.S + j]);
  if (view.hasMask()) ImGui::Text("masked (padding)   %s", view.isAllowed(layer, b, i, j) ? "no" : "yes");
  ImGui::EndTooltip();
}

// Tiled cells: the exact values when the zoomed window's tile has them, else the overview
// block holding the cell (its largest probability and largest |score|).
void drawTiledCellTooltip(const ViewModel& view, const WindowTile* tile, int64_t layer, int64_t b, int64_t h, int64_t i,
                          int64_t j) {
  const TiledMaps& m = *view.tiled;
  const TiledAttention& t = m.layer(layer);
  ImGui::BeginTooltip();
  drawTokenLines(view, b, i, j, m.query_tokens[b], m.key_tokens[b]);  // a model's raw pieces too (real rows)
  ImGui::Separator();
  float prob = 0.0f, score = 0.0f;
  bool allowed = false;
  if (tile && tile->exactCell(i, j, &prob, &score, &allowed)) {
    if (allowed) ImGui::Text("scaled score (x%.4g) %.9g", t.scale, score);
    else ImGui::Text("scaled score       %s (masked)", t.fill == MaskFill::NegInf ? "-inf" : "-1e9");
    ImGui::Text("masked             %s", allowed ? "no" : "yes");
    ImGui::Text("probability        %.9g", prob);
    ImGui::TextDisabled("exact: computed from Q and K for this window");
  } else {
    const int64_t r = m.overviewRow(i), c = m.overviewCol(j);
    const size_t cell = view.mapIndex(layer, b, h) * static_cast<size_t>(view.L * view.S) + static_cast<size_t>(r * view.S + c);
    ImGui::Text("overview block: queries %lld-%lld, keys %lld-%lld", static_cast<long long>(m.firstRow(r)),
                static_cast<long long>(m.firstRow(r + 1) - 1), static_cast<long long>(m.firstCol(c)),
                static_cast<long long>(m.firstCol(c + 1) - 1));
    if (view.isAllowed(layer, b, r, c)) {
      const size_t in_layer = cell - view.mapIndex(layer, 0, 0) * static_cast<size_t>(view.L * view.S);
      ImGui::Text("largest probability  %.5g", view.maps[layer].probs.get()[in_layer]);
      ImGui::Text("largest |score|      %.5g", view.maps[layer].scores.get()[in_layer]);
    } else {
      ImGui::TextUnformatted("every cell of the block is masked");
    }
    ImGui::TextDisabled("zoom in to %lldx%lld cells or fewer for exact values", static_cast<long long>(kTextureMaxSide),
                        static_cast<long long>(kTextureMaxSide));
  }
  if (m.fully_masked.data[b * m.L + i]) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.45f, 1.0f));
    ImGui::TextUnformatted("every key of this query is masked: PyTorch returns NaN here");
    ImGui::PopStyleColor();
  }
  ImGui::EndTooltip();
}

// One heatmap of the focus view: its title line, the map, axis labels, tooltip,
// fully-masked-row marks and (optionally) its colour bar.
struct FocusMap {
  const char* title = "";
  const char* short_title = nullptr;  // when the title does not fit over the map
  const char* id = "";
  const char* layout_name = "";
  const ViewModel* source = nullptr;  // its values (tooltip, fully masked rows)
  HeatmapView view;
  ValueRange range;
  bool log_scale = false;
  std::optional<MapKind> export_view;  // set: Export button, click selects it for Ctrl+S
  const char* tooltip_heading = nullptr;
  bool row_labels = true;            // false when the map left of it shows the same rows
  bool color_bar = true;             // false when the map right of it shows the same scale
  const char* bar_format = "%.3g";
  const WindowTile* tile = nullptr;  // a tiled source's zoomed window, when computed
};

struct FocusGeometry {
  float row_label_w = 0, col_label_h = 0, bar_w = 0, map_w = 0, map_h = 0, line_h = 0;
  int64_t layer = 0, b = 0, h = 0;  // the map shown
  CellWindow window;                // its visible rows and keys (resolved: never whole())
};

// Each wheel notch zooms by this factor around the pointer.
constexpr double kZoomStep = 1.25;

// The wheel over a map zooms around the pointer; a drag pans (whole cells, from where the
// drag began). The maths is core/view/zoom's; setZoom clamps.
void zoomAndPan(AppState& state, const HeatmapHit& hit, const FocusGeometry& g, int64_t L, int64_t S) {
  const float wheel = ImGui::GetIO().MouseWheel;
  if (hit.hovered && wheel != 0.0f) {
    setZoom(state, zoomAround(state.view.zoom, L, S, hit.row_f, hit.col_f, std::pow(kZoomStep, wheel)));
  }
  if (!hit.active || !ImGui::IsMouseDragging(ImGuiMouseButton_Left)) return;
  if (!state.view.pan_from) state.view.pan_from = state.view.zoom;
  const ImVec2 drag = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left);
  const CellWindow from = resolveWindow(*state.view.pan_from, L, S);
  const auto cells = [](float pixels, int64_t count, float extent) {
    return static_cast<int64_t>(std::lround(pixels * static_cast<float>(count) / extent));
  };
  // Dragging the map right shows keys further left.
  setZoom(state, panBy(*state.view.pan_from, L, S, -cells(drag.y, from.rows, g.map_h), -cells(drag.x, from.cols, g.map_w)));
}

// Row labels are query tokens: a click shows that query's attention in every head (Query
// focus tab), Ctrl+click adds it to the chosen queries. Only while rows are 6 px or more.
void chooseQueryByLabel(AppState& state, ImVec2 top_left, float label_w, const FocusGeometry& g) {
  const float cell_h = g.map_h / static_cast<float>(g.window.rows);
  if (cell_h < 6.0f) return;
  for (int64_t r = 0; r < g.window.rows; ++r) {
    ImGui::SetCursorScreenPos(ImVec2(top_left.x, top_left.y + cell_h * static_cast<float>(r)));
    ImGui::PushID(static_cast<int>(r));
    const bool clicked = ui::invisibleButton(state.script.layout, r == 0 ? "focus_query_label_0" : "", "##query_label",
                                             ImVec2(std::max(1.0f, label_w - 4), cell_h));
    ImGui::PopID();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("click: this query in every head (Query focus); Ctrl+click: add it");
    if (!clicked) continue;
    chooseQuery(state, g.window.row0 + r, ImGui::GetIO().KeyCtrl);
    state.view.tab = FocusTab::QueryFocus;
    state.view.tab_requested = true;
    markStateChanged(state);
  }
}

// Fully masked query rows: a red mark right of the map ([B, L] of the real map).
void drawFullyMaskedMarks(const ViewModel& v, const AttentionTrace* t, const FocusGeometry& g, ImVec2 map_min,
                          ImVec2 map_max) {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float cell_h = g.map_h / static_cast<float>(g.window.rows);
  const BoolTensor* fully_masked = t ? &t->fully_masked : v.tiled ? &v.tiled->fully_masked : nullptr;
  for (int64_t r = 0; fully_masked && r < g.window.rows; ++r) {
    if (!fully_masked->data[g.b * v.mapL() + g.window.row0 + r]) continue;
    list->AddRectFilled(ImVec2(map_max.x + 3, map_min.y + cell_h * r),
                        ImVec2(map_max.x + 8, map_min.y + cell_h * (r + 1)), IM_COL32(230, 60, 60, 255));
  }
}

// The knocked-out cells of the shown head (a model run's), crossed in the intervention colour where
// cells are 4 px or more (recorded as "knocked_cell_<query>_<key>").
void drawKnockedCells(AppState& state, const ViewModel& v, const FocusGeometry& g, ImVec2 map_min) {
  const float cell_w = g.map_w / static_cast<float>(g.window.cols), cell_h = g.map_h / static_cast<float>(g.window.rows);
  if (cell_w < 4.0f || cell_h < 4.0f) return;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImU32 color = ImGui::GetColorU32(kInterventionColor);
  for (const KnockedCell& c : v.knocked_cells) {
    const int64_t r = c.query - g.window.row0, k = c.key - g.window.col0;
    if (!v.knockedOut(g.layer, g.h, c.query, c.key) || r < 0 || r >= g.window.rows || k < 0 || k >= g.window.cols) continue;
    const ImVec2 min(map_min.x + cell_w * k, map_min.y + cell_h * r), max(min.x + cell_w, min.y + cell_h);
    list->AddLine(min, max, color, 2.0f);
    list->AddLine(ImVec2(min.x, max.y), ImVec2(max.x, min.y), color, 2.0f);
    state.script.layout.record("knocked_cell_" + std::to_string(c.query) + "_" + std::to_string(c.key), min,
                               ImVec2(cell_w, cell_h));
  }
}

// A model run's map: the right-click knockout menu and the crossed knocked-out cells.
void drawKnockouts(AppState& state, const ViewModel& v, const HeatmapHit& hit, const std::string& map,
                   const FocusGeometry& g, ImVec2 map_min) {
  drawKnockoutMenu(state, hit, map, g.layer, g.h);
  drawKnockedCells(state, v, g, map_min);
}

// Draws `map` with its left edge (row labels included) at x0, title line at y0.
void drawFocusMap(AppState& state, FocusMap& map, const FocusGeometry& g, float x0, float y0,
                  const std::vector<std::string>& q_tokens, const std::vector<std::string>& k_tokens) {
  const ViewModel& v = *map.source;
  // The core trace behind this layer (tooltip details, fully masked rows); null when imported.
  const AttentionTrace* t = v.maps[g.layer].trace.get();
  const float label_w = map.row_labels ? g.row_label_w : 0.0f;
  const bool selected = map.export_view && state.view.map_kind == *map.export_view;
  ImGui::SetCursorScreenPos(ImVec2(x0 + label_w, y0));
  if (map.export_view) {
    // Title line: a small Export button, then the title (yellow when Ctrl+S exports this map).
    const MapKind view = *map.export_view;
    ImGui::PushID(map.id);
    if (ui::smallButton(state.script.layout, std::string("export_") + mapKindName(view) + "_button", "Export")) {
      state.view.map_kind = view;
      requestFigureExport(state.exports, state.view, mapKindName(view));
    }
    ImGui::PopID();
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("export this heatmap as a figure (formats and folder under Export in the control panel)");
    }
    ImGui::SameLine();
  }
  // The title, else its short form, fits the map's width: it never runs into the next map's
  // title (cut as a last resort).
  const float title_w = x0 + label_w + g.map_w - ImGui::GetCursorScreenPos().x;
  std::vector<std::string> forms{map.title};
  if (map.short_title) forms.emplace_back(map.short_title);
  const std::string title = fitText(forms[firstFitting(forms, title_w)], title_w);
  const std::string title_name = std::string(map.layout_name) + "_title";
  if (selected) {
    ui::text(state.script.layout, title_name, ui::coloredText(ImVec4(1.0f, 0.8f, 0.2f, 1.0f)), "%s", title.c_str());
  } else {
    ui::textUnformatted(state.script.layout, title_name, title);
  }
  const ImVec2 map_min(x0 + label_w, y0 + g.line_h);
  ImGui::SetCursorScreenPos(map_min);
  map.view.rows = g.window.rows;
  map.view.cols = g.window.cols;
  map.view.row0 = g.window.row0;
  map.view.col0 = g.window.col0;
  map.view.range = map.range;
  map.view.log_scale = map.log_scale;
  map.view.outlined = selected;
  map.view.marked_row = v.predictions.empty() ? -1 : state.view.selected_query;  // the pinned query row
  map.view.name = map.layout_name;
  showResultState(state, map.view, !v.tiled);  // tiled: hover holds the overview block; this map shows real cells
  const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), map.view, ImVec2(g.map_w, g.map_h));
  if (hit.clicked && map.export_view && !selected) {
    state.view.map_kind = *map.export_view;
    markStateChanged(state);
  }
  zoomAndPan(state, hit, g, v.mapL(), v.mapS());
  if (hit.clicked && !v.predictions.empty() && state.view.selected_query != hit.row) {
    pinQueryRow(state, hit.row);  // the predictions panel keeps this query
  }
  if (v.source == ViewSource::ModelRun && !v.tiled) drawKnockouts(state, v, hit, map.layout_name, g, map_min);
  const ImVec2 map_max(map_min.x + g.map_w, map_min.y + g.map_h);
  const LabelSpan rows{map.row_labels ? &q_tokens : nullptr, g.window.row0, g.window.rows};
  const LabelSpan cols{&k_tokens, g.window.col0, g.window.cols};
  const AxisLabelsDrawn drawn = drawAxisLabels(rows, cols, map_min, map_max);
  if (map.row_labels && !v.tiled) chooseQueryByLabel(state, ImVec2(x0, map_min.y), label_w, g);
  if (map.row_labels) state.script.focus_axis.first_row = drawn.first_row, state.script.focus_axis.last_row = drawn.last_row;
  state.script.focus_axis.first_col = drawn.first_col, state.script.focus_axis.last_col = drawn.last_col;
  if (hit.hovered && v.tiled) {
    state.view.hover_next = {v.tiled->overviewRow(hit.row), v.tiled->overviewCol(hit.col)};
    state.view.map_hover_next = {hit.row, hit.col};
    drawTiledCellTooltip(v, map.tile, g.layer, g.b, g.h, hit.row, hit.col);
  } else if (hit.hovered) {
    state.view.hover_next = {hit.row, hit.col};
    if (t) drawTraceCellTooltip(v, *t, g.b, g.h, hit.row, hit.col, q_tokens, k_tokens, map.tooltip_heading);
    else drawImportedCellTooltip(v, g.layer, g.b, g.h, hit.row, hit.col, q_tokens, k_tokens);
  }
  drawFullyMaskedMarks(v, t, g, map_min, map_max);
  if (map.color_bar) {
    ImGui::SetCursorScreenPos(ImVec2(map_max.x + 12, map_min.y));
    drawColorBar(heatmapCanvas(state),
                 {map.view.colormap, map.range, map.log_scale, map.bar_format, std::string(map.layout_name) + "_colorbar"},
                 ImVec2(g.bar_w - 12, g.map_h));
  }
}

// A tiled source: how the focus maps show it (the overview's pooling, or the zoomed window:
// exact, pooled, or still computing). Also in the state log.
std::string tiledPoolingNote(const AppState& state, const ViewModel& v, const CellWindow& w, bool zoomed) {
  const TiledMaps& m = *v.tiled;
  char text[200];
  const ZoomTileState& z = state.feature<ZoomTileState>();
  if (!zoomed) {
    std::snprintf(text, sizeof text, "overview: %lldx%lld max-pooled from %lldx%lld (every head, in tiles)",
                  static_cast<long long>(m.rows), static_cast<long long>(m.cols), static_cast<long long>(m.L),
                  static_cast<long long>(m.S));
  } else if (const WindowTile* tile = z.ready()) {
    if (tile->exact)
      std::snprintf(text, sizeof text, "exact cells, computed for this window in %.0f ms", tile->milliseconds);
    else
      std::snprintf(text, sizeof text, "window: %lldx%lld max-pooled from %lldx%lld, computed in %.0f ms",
                    static_cast<long long>(tile->rows), static_cast<long long>(tile->cols),
                    static_cast<long long>(w.rows), static_cast<long long>(w.cols), tile->milliseconds);
  } else if (z.tile && !z.pending() && !z.tile->error.empty()) {
    std::snprintf(text, sizeof text, "this window failed: %s", z.tile->error.c_str());
  } else {
    std::snprintf(text, sizeof text, "computing this window (overview blocks meanwhile)");
  }
  return text;
}

// Under the maps: the visible window and how the texture shows it, or how to zoom.
void drawZoomLine(WidgetRects& rects, const CellWindow& w, bool zoomed, int64_t L, int64_t S,
                  const std::string& tiled_note) {
  constexpr const char* kName = "focus_zoom_line";
  const int64_t texels_r = std::min(w.rows, kTextureMaxSide), texels_c = std::min(w.cols, kTextureMaxSide);
  const bool pooled = texels_r < w.rows || texels_c < w.cols;
  char pooling[220] = "";
  if (!tiled_note.empty())
    std::snprintf(pooling, sizeof pooling, "   %s", tiled_note.c_str());
  else if (pooled)
    std::snprintf(pooling, sizeof pooling, "   shown %lldx%lld max-pooled from %lldx%lld", static_cast<long long>(texels_r),
                  static_cast<long long>(texels_c), static_cast<long long>(w.rows), static_cast<long long>(w.cols));
  if (zoomed) {
    // The how-to hint only while the line has room for it (F1 lists it too).
    ui::text(rects, kName, ui::disabledText(), "zoom: queries %lld-%lld of %lld, keys %lld-%lld of %lld%s%s",
                     static_cast<long long>(w.row0), static_cast<long long>(w.row0 + w.rows - 1),
                     static_cast<long long>(L), static_cast<long long>(w.col0),
                     static_cast<long long>(w.col0 + w.cols - 1), static_cast<long long>(S), pooling,
                     pooled || !tiled_note.empty() ? "" : "   (wheel zooms, drag pans, 0 resets)");
  } else if (!tiled_note.empty()) {
    ui::text(rects, kName, ui::disabledText(), "%s   (wheel zooms around the pointer, drag pans, 0 resets)",
             tiled_note.c_str());
  } else {
    // Wrapped: with a pooling note it is longer than a 1280-pixel window's focus panel.
    ui::text(rects, kName, ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
             "whole map%s   (wheel over a map zooms around the pointer, drag pans, 0 resets)", pooling);
  }
}

// Left-to-right width a map takes besides the map itself.
float mapExtraWidth(const FocusMap& map, const FocusGeometry& g) {
  return (map.row_labels ? g.row_label_w : 0.0f) + (map.color_bar ? g.bar_w : 0.0f);
}

// Which runs the Maps tab shows and how: this run, the mistakes lab's correct run, the
// zoomed window and, for a tiled source, the overview or the exact tile.
struct FocusScene {
  const ViewModel* v = nullptr;        // this run; null when it crashed (mistakes lab)
  const ViewModel* correct = nullptr;  // the correct run beside it, when it has its sizes
  const ViewModel* shown = nullptr;    // sizes and tokens
  bool crashed = false;                // the buggy run threw: only the correct run is shown
  const TiledMaps* tiled = nullptr;
  bool zoomed = false;
  bool use_zoom_textures = false;      // the window's own textures instead of the whole map's
  const WindowTile* tile = nullptr;    // a tiled source's exact window, when shown
  ImVec2 uv0{0, 0}, uv1{1, 1};         // the overview texture cropped to the window
  FocusGeometry g;
};

// Null shown when nothing has been computed yet.
FocusScene focusScene(const AppState& state) {
  FocusScene scene;
  const ViewTextures& tex = state.gpu.textures;
  const ViewTextures& correct_tex = state.gpu.correct_textures;
  scene.correct = correct_tex.probs.empty() ? nullptr : state.compute.correctView().get();
  // The buggy run threw (e.g. kv-reshape-with-L with S != L): only the correct run is shown.
  scene.crashed = scene.correct && !state.compute.error().empty();
  scene.v = scene.crashed || tex.probs.empty() ? nullptr : state.compute.view.get();
  scene.shown = scene.v ? scene.v : scene.correct;
  if (!scene.shown) return scene;
  const ViewModel* v = scene.v;
  // Both runs share their inputs, so only a mistake that changes the shapes could differ.
  if (v && scene.correct && (scene.correct->L != v->L || scene.correct->S != v->S || scene.correct->H != v->H))
    scene.correct = nullptr;
  FocusGeometry& g = scene.g;
  g.layer = state.view.focus.layer;
  g.b = v ? tex.batch_item : correct_tex.batch_item;
  g.h = state.view.focus.head;
  // Zoomed: the window's own textures (exact cells up to kTextureMaxSide per side). A tiled
  // source shows the overview's blocks of the window until the tile worker's window comes.
  const ZoomTextures& zoom = state.gpu.zoom;
  scene.tiled = v ? v->tiled.get() : nullptr;
  scene.zoomed = !state.view.zoom.whole() && (scene.tiled || zoom.probs || zoom.correct_probs);
  g.window = resolveWindow(scene.zoomed ? state.view.zoom : CellWindow{}, scene.shown->mapL(), scene.shown->mapS());
  const bool tile_shown = scene.tiled && scene.zoomed && zoom.tile_maps == scene.tiled && zoom.window == g.window &&
                          zoom.focus == ViewFocus{g.layer, g.h, g.b} && zoom.probs;
  scene.tile = tile_shown ? state.feature<ZoomTileState>().ready() : nullptr;
  if (scene.tiled && !tile_shown) {  // nearest sampling keeps the overview's blocks
    const float L = static_cast<float>(scene.tiled->L), S = static_cast<float>(scene.tiled->S);
    scene.uv0 = ImVec2(static_cast<float>(g.window.col0) / S, static_cast<float>(g.window.row0) / L);
    scene.uv1 = ImVec2(static_cast<float>(g.window.col0 + g.window.cols) / S,
                       static_cast<float>(g.window.row0 + g.window.rows) / L);
  }
  scene.use_zoom_textures = scene.tiled ? tile_shown : scene.zoomed;
  return scene;
}

// What the focus view shows, numbered as everywhere: 0-based, with "of N" counts
// ("layer 1 of 2   head 3 of 4   batch item 0 of 1"); a named layer keeps its name
// ("h.5 (layer 5 of 12)").
std::string focusHeading(const ViewModel& shown, const FocusGeometry& g) {
  const auto of = [](const char* what, int64_t index, int64_t count) {
    return std::string(what) + " " + std::to_string(index) + " of " + std::to_string(count);
  };
  std::string text;
  if (shown.layers > 1) {
    const std::string& name = shown.maps[g.layer].name;
    const std::string layer = of("layer", g.layer, shown.layers);
    text = (name == "layer " + std::to_string(g.layer) ? layer : name + " (" + layer + ")") + "   ";
  }
  text += of("head", g.h, shown.H) + "   " + of("batch item", g.b, shown.B) + "   L = " + std::to_string(shown.mapL()) +
          (shown.layers > 1 ? " queries x S = " : " queries (rows) x S = ") + std::to_string(shown.mapS()) +
          (shown.layers > 1 ? " keys" : " keys (columns)");
  return text;
}

void drawFocusHeading(AppState& state, const FocusScene& scene) {
  const ViewModel& shown = *scene.shown;
  const FocusGeometry& g = scene.g;
  const std::string heading = focusHeading(shown, g);
  ImGui::TextUnformatted(heading.c_str());
  state.script.layout.recordText("focus_heading", heading);
  if (scene.tiled) {  // how the maps show a source too large to hold, where it is always seen
    ImGui::SameLine();
    ui::text(state.script.layout, "focus_tiled_note", ui::coloredText(ImVec4(1.0f, 0.8f, 0.3f, 1.0f)), "   tiled: %s",
                    tiledPoolingNote(state, *scene.v, g.window, scene.zoomed).c_str());
  }
}

// A map of this run (cropped to the window of a tiled overview, or its exact tile).
FocusMap& addThisRunMap(std::vector<FocusMap>& maps, const FocusScene& scene, const char* layout_name,
                        unsigned int texture) {
  FocusMap& map = maps.emplace_back();
  map.id = layout_name;
  map.layout_name = layout_name;
  map.source = scene.v;
  map.view.texture = texture;
  map.view.uv0 = scene.uv0, map.view.uv1 = scene.uv1;
  map.tile = scene.tile;
  return map;
}

// This run's scores and probabilities (the with-mistake map when a correct run is beside it).
void addThisRunMaps(const AppState& state, const FocusScene& scene, std::vector<FocusMap>& maps) {
  const ViewModel* v = scene.v;
  if (!v) return;
  const ViewTextures& tex = state.gpu.textures;
  const ZoomTextures& zoom = state.gpu.zoom;
  const size_t focused = tex.index(scene.g.layer, scene.g.h);
  if (v->hasScores()) {
    FocusMap& scores = addThisRunMap(maps, scene, "focus_scores", scene.use_zoom_textures ? zoom.scores : tex.scores[focused]);
    scores.title = scene.correct ? "scores (scaled)" : "scores (scaled, before softmax)";  // 3 maps: less room
    scores.short_title = "scores";
    scores.view.colormap = Colormap::Diverging;
    scores.range = {-tex.score_abs_max[focused], tex.score_abs_max[focused]};
    scores.export_view = MapKind::Scores;
    scores.bar_format = "%+.3g";
  }
  FocusMap& probs = addThisRunMap(maps, scene, "focus_probs", scene.use_zoom_textures ? zoom.probs : tex.probs[focused]);
  const bool dropout = v->maps[scene.g.layer].dropout_applied;
  probs.title = scene.correct ? (dropout ? "with mistake (dropout)" : "with mistake")
                : v->source == ViewSource::Imported ? "probabilities (imported)"
                : (dropout ? "probabilities (after dropout)" : "probabilities (softmax over keys)");
  probs.short_title = scene.correct ? "with mistake" : "probabilities";
  probs.view.colormap = state.settings.prob_colormap;
  probs.range = {state.settings.log_scale ? tex.prob_min_positive : 0.0f, tex.prob_max};
  probs.log_scale = state.settings.log_scale;
  probs.export_view = MapKind::Probs;
}

// The mistakes lab's correct run, on one colour scale with the with-mistake map left of it.
void addCorrectRunMap(const AppState& state, const FocusScene& scene, std::vector<FocusMap>& maps) {
  if (!scene.correct) return;
  const ViewTextures& correct_tex = state.gpu.correct_textures;
  FocusMap& right = maps.emplace_back();
  right.title = "correct (no mistake)";
  right.short_title = "correct";
  right.id = right.layout_name = "focus_correct";
  right.source = scene.correct;
  right.view.texture = scene.zoomed ? state.gpu.zoom.correct_probs : correct_tex.probs[correct_tex.index(0, scene.g.h)];
  right.view.colormap = state.settings.prob_colormap;
  right.range = {state.settings.log_scale ? correct_tex.prob_min_positive : 0.0f, correct_tex.prob_max};
  right.log_scale = state.settings.log_scale;
  right.tooltip_heading = "correct run (no mistake)";
  if (!scene.v) return;
  FocusMap& probs = maps[maps.size() - 2];
  const ValueRange both{std::min(probs.range.low, right.range.low), std::max(probs.range.high, right.range.high)};
  probs.range = right.range = both;
  probs.color_bar = false;
  right.row_labels = false;
}

// The note under the maps when query rows of the focused layer have every key masked;
// "" when none has.
std::string fullyMaskedNote(const AppState& state, const FocusScene& scene) {
  const ViewModel* v = scene.v;
  const AttentionTrace* t = v ? v->maps[scene.g.layer].trace.get() : nullptr;
  const ViewTextures& tex = state.gpu.textures;
  const int64_t fully_masked = (t || scene.tiled) && tex.hasMask() ? tex.fully_masked_rows[scene.g.layer] : 0;
  if (fully_masked <= 0) return "";
  const bool neg_inf = (t ? t->fill : scene.tiled->layer(scene.g.layer).fill) == MaskFill::NegInf;
  char note[320];
  std::snprintf(note, sizeof note,
                "%lld fully masked row%s (red marks): every key is masked, so PyTorch's softmax returns NaN there; "
                "shown as masked with probability %s.",
                static_cast<long long>(fully_masked), fully_masked == 1 ? "" : "s",
                neg_inf ? "0" : "1/S (the -1e9 fill gives a uniform row)");
  return note;
}

// Map sizes that fit the panel: every map the same size, the labels and colour bars beside.
void fitFocusGeometry(AppState& state, const FocusScene& scene, const std::vector<FocusMap>& maps, float gap,
                      FocusGeometry& g) {
  g.line_h = ImGui::GetTextLineHeightWithSpacing();
  const LabelWidths& widths = tokenLabelWidths(state.ui.label_widths, *scene.shown, g.b);
  g.row_label_w = widths.query + 8.0f;
  g.col_label_h = widths.key + 8.0f;
  g.bar_w = 58.0f;
  for (const FocusMap& map : maps)  // room for the widest tick labels, 12 px from the map
    if (map.color_bar)
      g.bar_w = std::max(g.bar_w, 12.0f + colorBarWidth({map.view.colormap, map.range, map.log_scale, map.bar_format, ""}));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // A crashed mistake run keeps the two-map geometry (its message takes the left place);
  // so does an imported map without scores (the same size as a computed one).
  const int slots = std::max(2, static_cast<int>(maps.size()));
  float fixed_w = gap * static_cast<float>(slots - 1);
  for (const FocusMap& map : maps) fixed_w += mapExtraWidth(map, g);
  if (maps.size() < 2) fixed_w += g.row_label_w + g.bar_w;
  const float max_w = (avail.x - fixed_w) / static_cast<float>(slots);
  // Room for the title line above and the footer below: legend, outline note, zoom line
  // (and the mistake line beside a correct run), then the fully-masked-rows note.
  const std::string note = fullyMaskedNote(state, scene);
  const float note_h = note.empty() ? 0.0f : ImGui::CalcTextSize(note.c_str(), nullptr, false, avail.x).y + 4.0f;
  const float max_h = avail.y - g.line_h * (scene.correct ? 5.2f : 4.2f) - g.col_label_h - note_h;
  const float aspect = static_cast<float>(scene.shown->mapS()) / static_cast<float>(scene.shown->mapL());
  g.map_h = std::max(16.0f, std::floor(std::min(max_h, max_w / aspect)));
  g.map_w = std::max(16.0f, std::floor(std::min(max_h, max_w / aspect) * aspect));
}

// Where the buggy maps would be: the exception the buggy module raises.
float drawCrashBlock(AppState& state, const FocusGeometry& g, ImVec2 origin) {
  const float block_w = g.row_label_w + g.map_w + g.bar_w;
  ImGui::SetCursorScreenPos(ImVec2(origin.x + g.row_label_w, origin.y));
  ImGui::TextUnformatted("with mistake");
  ImGui::SetCursorScreenPos(ImVec2(origin.x + g.row_label_w, origin.y + g.line_h));
  ImGui::BeginGroup();  // wrapped lines start at the block's left edge
  ImGui::PushTextWrapPos(ImGui::GetCursorPos().x + block_w - g.row_label_w);
  ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.35f, 1.0f), "the buggy code crashes with:");
  ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.35f, 1.0f), "%s", state.compute.error().c_str());
  ImGui::PopTextWrapPos();
  ui::endGroup(state.script.layout, "focus_crash");
  return block_w;
}

// Under the maps with a correct run beside: how much the mistake changes this head, and the
// button that opens the difference view.
void drawMistakeLine(AppState& state, const FocusScene& scene) {
  const std::string summary = mistakeDiffSummary(state);
  if (!summary.empty()) {
    ui::text(state.script.layout, "focus_diff_summary", ui::coloredText(ImVec4(1.0f, 0.62f, 0.18f, 1.0f)), "%s",
             summary.c_str());
  }
  if (!scene.v) return;
  ImGui::SameLine();
  if (ui::smallButton(state.script.layout, "focus_difference_view", "difference view")) {
    const FocusGeometry& g = scene.g;
    state.view.compare = {{g.layer, g.h, false, Mistake::None}, {g.layer, g.h, true, Mistake::None}, true};
    state.view.tab = FocusTab::Compare;
    state.view.tab_requested = true;
    saveLater(state);
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("show with mistake - correct, cell by cell (Compare tab)");
}

// Legends, the zoom line and the fully-masked-rows note under the maps.
void drawFocusFooter(AppState& state, const FocusScene& scene) {
  if (scene.correct) drawMistakeLine(state, scene);
  const ViewModel* v = scene.v;
  const FocusGeometry& g = scene.g;
  if (v && !v->hasMask()) {
    ImGui::TextDisabled("rows: query tokens   columns: key tokens   values as stored in the bundle");
  } else {
    ImGui::TextDisabled("rows: query tokens   columns: key tokens   grey hatched: masked (-inf, not a number)");
  }
  if (v) ImGui::TextDisabled("yellow outline: the map Ctrl+S exports (click a map to choose)");
  state.script.focus_note = scene.tiled ? tiledPoolingNote(state, *v, g.window, scene.zoomed) : "";
  drawZoomLine(state.script.layout, g.window, scene.zoomed, scene.shown->mapL(), scene.shown->mapS(),
               state.script.focus_note);
  const std::string note = fullyMaskedNote(state, scene);
  if (note.empty()) return;
  ui::text(state.script.layout, "focus_fully_masked_note",
           ui::TextLook{ImVec4(1.0f, 0.45f, 0.45f, 1.0f), true}, "%s", note.c_str());
}

// The "Maps" tab: scores and probabilities of the focused map (and the correct run's), or
// the chosen across-layer map (rollout, flow).
void drawFocusMaps(AppState& state) {
  drawMapKindChooser(state);
  if (mapKindInfo(state.view.map_kind).across_layers) {
    drawLayerMapsView(state);
    return;
  }
  FocusScene scene = focusScene(state);
  if (!scene.shown) {
    ImGui::TextDisabled("no attention computed yet");
    return;
  }
  drawFocusHeading(state, scene);
  // The maps, left to right: scores, probabilities (with the mistake), correct probabilities.
  std::vector<FocusMap> maps;
  addThisRunMaps(state, scene, maps);
  addCorrectRunMap(state, scene, maps);
  constexpr float kGap = 12.0f;
  FocusGeometry& g = scene.g;
  fitFocusGeometry(state, scene, maps, kGap, g);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  float x = origin.x;
  if (scene.crashed) x += drawCrashBlock(state, g, origin) + kGap;
  const TiledMaps* tiled = scene.tiled;
  const std::vector<std::string>& q_tokens = tiled ? tiled->query_tokens[g.b] : scene.shown->query_tokens[g.b];
  const std::vector<std::string>& k_tokens = tiled ? tiled->key_tokens[g.b] : scene.shown->key_tokens[g.b];
  for (FocusMap& map : maps) {
    drawFocusMap(state, map, g, x, origin.y, q_tokens, k_tokens);
    x += mapExtraWidth(map, g) + g.map_w + kGap;
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + g.line_h + g.map_h + g.col_label_h + 4));
  drawFocusFooter(state, scene);
}

}  // namespace

float focusHeight(const AppState& state, const ColumnSpace& space) {
  // The focus view's square maps are limited by its width; give the head grid above whatever
  // height they leave (between 30% and 50%), so neither panel keeps an empty band. Three maps
  // (mistake comparison) have two row-label columns and two colour bars in all, and one more
  // text line (the difference summary) under them.
  const float body_h = space.height;
  const int maps = focusMapCount(state);
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float focus_inner_w = space.width - 2 * ImGui::GetStyle().WindowPadding.x - 12.0f * (maps - 1);
  const float focus_map = (focus_inner_w - 2 * (70.0f + 58.0f)) / maps;  // minus row labels and colour bars
  const float tab_bar_h = ImGui::GetFrameHeightWithSpacing();  // Maps / Compare tabs
  const float focus_h = focus_map + ImGui::GetFrameHeight() + (maps == 3 ? 8.0f : 7.0f) * line_h + 60.0f + tab_bar_h;
  const float grid_h = chosenSize(state.view.panel_sizes.grid, body_h,
                                  std::floor(std::clamp(body_h - focus_h, body_h * 0.30f, body_h * 0.50f)), kMinBand,
                                  body_h - 2 * kMinBand);
  return body_h - grid_h;
}

void drawFocusPanel(AppState& state) {
  // The wheel zooms the maps, so it must not scroll the panel.
  if (beginPanelWindow(state, "Focus", "focus", ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse)) {
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) state.view.pan_from.reset();  // a drag ended
    if (ImGui::BeginTabBar("focus_tabs")) {
      const std::pair<FocusTab, const char*> tabs[] = {
          {FocusTab::Maps, "Maps"}, {FocusTab::Compare, "Compare A / B"}, {FocusTab::QueryFocus, "Query focus"},
          {FocusTab::Interventions, "Interventions"}, {FocusTab::Patching, "Patching"}};
      for (const auto& [tab, label] : tabs) {
        const bool requested = state.view.tab_requested && state.view.tab == tab;
        const bool open = ui::beginTabItem(state.script.layout, std::string("focus_tab_") + focusTabName(tab), label,
                                           requested ? ImGuiTabItemFlags_SetSelected : 0);
        if (!open) continue;
        if (state.view.tab != tab && !state.view.tab_requested) {
          state.view.tab = tab;
          markStateChanged(state);
        }
        ImGui::EndTabItem();
      }
      state.view.tab_requested = false;
      ImGui::EndTabBar();
    }
    // The other tabs are features of their own (compare, query_focus, interventions, patching: rows of the registry).
    if (state.view.tab == FocusTab::Maps) drawFocusMaps(state);
    else drawPanelPart(state, "focus", focusTabName(state.view.tab));
  }
  ImGui::End();
}

}  // namespace attnscope
