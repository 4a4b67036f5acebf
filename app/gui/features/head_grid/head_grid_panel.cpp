// Small multiples: every (layer, head) probability map of the batch item on one shared
// colour scale. One layer: the head grid (heads wrap into as many rows as fill the panel).
// Several layers: a layer x head grid, rows = layers, columns = heads, both labelled.
// More heads than kOverviewAutoHeads (or the user's toggle): the layers x heads overview
// (features/overview) instead of tiles.
// The focused map is outlined; click a tile (or use the arrow keys) to focus it. A strip
// under each tile shows its group (heads that attend alike, from the head metrics table);
// with "order grid by table" the tiles wrap in the table's order, every layer's heads in
// one sequence.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gui/features/head_grid/head_grid.h"
#include "gui/features/head_grid/overview.h"
#include "gui/jobs/export_jobs.h"
#include "gui/render/heatmap_widget.h"
#include "gui/shell/panels.h"

namespace attnscope {
namespace {

constexpr float kBarWidth = 70.0f, kGap = 10.0f;
constexpr float kMaxStretch = 1.4f;  // tiles may widen by this much to use spare width
const ImVec4 kFocusedLabel(1.0f, 0.8f, 0.2f, 1.0f);
// A trained model's head is labelled with its pattern when training.json scores it at
// least this high (python-code's weak patterns score 0.15-0.26, its clear heads 0.58+).
constexpr double kClearPatternScore = 0.3;

struct TileSize {
  float w = 8.0f, h = 8.0f;
};

// The largest tile at the map's aspect ratio (widened by up to kMaxStretch) that fits
// `cols` x `rows` slots of slot_w x slot_h (each slot minus `label_h` above the tile).
TileSize fitTile(float slot_w, float slot_h, float aspect) {
  const float h = std::min(slot_h, slot_w / aspect);
  const float w = std::min(slot_w, h * aspect * kMaxStretch);
  return {std::max(8.0f, std::floor(w)), std::max(8.0f, std::floor(h))};
}

// Under the tile at pos: the group marker of (layer, head) when the head table is known.
void drawGroupStrip(const AppState& state, int64_t layer, int64_t head, ImVec2 pos, TileSize size) {
  const HeadTable* table = shownHeadTable(state);
  if (!table) return;
  const ImU32 color = groupColor(table->group(layer * table->H + head, state.view.focus.batch_item));
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(pos.x, pos.y + size.h + 2), ImVec2(pos.x + size.w, pos.y + size.h + 6),
                                            color);
}

// The clear patterns training.json names for (layer, head), e.g. "induction"; "" for none.
std::string clearPatterns(const ViewModel& view, int64_t layer, int64_t head) {
  std::string text;
  for (const HeadNote& note : view.notable_heads)
    if (note.layer == layer && note.head == head && note.score >= kClearPatternScore)
      text += (text.empty() ? "" : ", ") + note.pattern;
  return text;
}

// The pattern label in a tile's top-right corner (the masked half of a causal map): the
// whole note, else its first word ("previous token" -> "previous"), else none (the tile's
// tooltip names it). Never a word cut short.
void drawTileNote(AppState& state, const std::string& whole, ImVec2 pos, TileSize size, const std::string& name) {
  const std::vector<std::string> forms{whole, whole.substr(0, whole.find_first_of(" ,"))};
  const std::string& note = forms[firstFitting(forms, size.w - 6)];
  const ImVec2 text = ImGui::CalcTextSize(note.c_str());
  if (text.x + 6 > size.w || text.y + 6 > size.h) return;  // no room on a tiny tile
  const ImVec2 min(pos.x + size.w - text.x - 6, pos.y + 3), max(pos.x + size.w - 2, pos.y + text.y + 5);
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(min, max, IM_COL32(20, 21, 26, 220), 3.0f);
  list->AddText(ImVec2(min.x + 2, min.y + 1), IM_COL32(255, 255, 255, 255), note.c_str());
  const std::string note_name = "grid_note" + name.substr(std::string("grid_tile").size());
  state.script.layout.record(note_name, min, ImVec2(max.x - min.x, max.y - min.y));
  state.script.layout.recordText(note_name, note);
}

// An ablated head's tile struck through (both diagonals over a dimmed map, recorded as
// "grid_struck_..."), and a model run's ablate toggle in its bottom-left corner.
// Returns whether the pointer is on the toggle (a click there is the toggle's, not the tile's).
bool drawTileInterventions(AppState& state, const ViewModel& view, int64_t layer, int64_t head, ImVec2 pos, TileSize size,
                           const std::string& name) {
  if (view.source != ViewSource::ModelRun) return false;
  const std::string suffix = name.substr(std::string("grid_tile").size());
  if (view.ablation(layer, head) != kNotAblated) {
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 max(pos.x + size.w, pos.y + size.h);
    const ImU32 color = ImGui::GetColorU32(kInterventionColor);
    list->AddRectFilled(pos, max, IM_COL32(0, 0, 0, 120));
    list->AddLine(pos, max, color, 3.0f);
    list->AddLine(ImVec2(pos.x, max.y), ImVec2(max.x, pos.y), color, 3.0f);
    state.script.layout.record("grid_struck" + suffix, pos, ImVec2(size.w, size.h));
  }
  const float button = ImGui::GetFrameHeight();
  if (size.w < 2 * button || size.h < 2 * button) return false;  // no room on a tiny tile: the head table has it
  ImGui::SetCursorScreenPos(ImVec2(pos.x + 2, pos.y + size.h - button - 2));
  drawAblateToggle(state, view, "grid_ablate" + suffix, layer, head);
  return ImGui::IsItemHovered();
}

// One tile: the map of (layer, head) at pos; click focuses it.
void drawTile(AppState& state, const ViewModel& view, int64_t layer, int64_t head, ImVec2 pos, TileSize size,
              const ValueRange& range, const std::string& name) {
  const ViewTextures& tex = state.gpu.textures;
  const ViewFocus& focus = state.view.focus;
  const bool focused = layer == focus.layer && head == focus.head;
  ImGui::SetCursorScreenPos(pos);
  HeatmapView map;
  map.texture = tex.probs[tex.index(layer, head)];
  map.rows = view.L;
  map.cols = view.S;
  map.colormap = state.settings.prob_colormap;
  map.range = range;
  map.log_scale = state.settings.log_scale;
  map.outlined = focused;
  map.overlapped = view.source == ViewSource::ModelRun;  // the ablate toggle
  map.name = name;
  showResultState(state, map);
  const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), map, ImVec2(size.w, size.h));
  drawGroupStrip(state, layer, head, pos, size);
  const std::string note = clearPatterns(view, layer, head);
  if (!note.empty()) drawTileNote(state, note, pos, size, name);
  const bool on_toggle = drawTileInterventions(state, view, layer, head, pos, size, name);
  if (hit.hovered && !on_toggle) {
    state.view.hover_next = {hit.row, hit.col};
    const std::string about = note.empty() ? "" : " (" + note + " head)";
    if (view.layers > 1) {
      ImGui::SetTooltip("%s, head %lld%s: click to focus", view.maps[layer].name.c_str(), static_cast<long long>(head),
                        about.c_str());
    } else {
      ImGui::SetTooltip("head %lld%s: click to focus", static_cast<long long>(head), about.c_str());
    }
  }
  if (hit.clicked && !focused && !on_toggle) setFocus(state, ViewFocus{layer, head, focus.batch_item});
}

void coloredLabel(WidgetRects& rects, const std::string& name, bool focused, const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, focused ? kFocusedLabel : ImGui::GetStyle().Colors[ImGuiCol_Text]);
  ui::textUnformatted(rects, name, text);
  ImGui::PopStyleColor();
}

// The Export button and, below it, the colour bar right of the tiles.
void drawGridSide(AppState& state, ImVec2 top_left, float bar_top, float tiles_h, const ValueRange& range) {
  ImGui::SetCursorScreenPos(ImVec2(top_left.x + 4, top_left.y));
  if (ui::smallButton(state.script.layout, "export_grid_small", "Export##grid")) requestFigureExport(state.exports, state.view, "grid");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("export every map as one figure with a shared colour bar (Ctrl+Shift+S)");
  // The top tick label is centred on the bar's top edge: start half a line below the button.
  const float top = std::max(bar_top, ImGui::GetItemRectMax().y + ImGui::GetTextLineHeight() / 2 + 2);
  const float bar_h = std::max(40.0f, std::min(tiles_h - (top - bar_top), 480.0f));
  ImGui::SetCursorScreenPos(ImVec2(top_left.x + 4, top));
  drawColorBar(heatmapCanvas(state), {state.settings.prob_colormap, range, state.settings.log_scale, "%.2g", "grid_colorbar"},
               ImVec2(kBarWidth - 8, bar_h));
}

struct GridEntry {
  int64_t layer = 0, head = 0;
};

// The tiles of the wrapping grid, in order: the table's order when the grid follows it,
// else the heads of layer 0.
std::vector<GridEntry> gridEntries(const AppState& state, const ViewModel& view) {
  std::vector<GridEntry> entries;
  const HeadTableView& table = state.view.table;
  if (gridFollowsTable(state)) {
    for (int64_t n : table.order) entries.push_back({n / view.H, n % view.H});
  } else {
    for (int64_t h = 0; h < view.H; ++h) entries.push_back({0, h});
  }
  return entries;
}

// A wrapping grid of `count` labelled tiles: the column count that covers the most area,
// the tile size, and the top-left corner that centres tiles and colour bar in the panel.
struct WrapLayout {
  int cols = 1;
  TileSize tile;
  ImVec2 origin;
  float label_h = 0.0f;
  ImVec2 tilePos(int64_t k) const {
    const int col = static_cast<int>(k % cols), row = static_cast<int>(k / cols);
    return ImVec2(origin.x + col * (tile.w + kGap), origin.y + row * (tile.h + label_h + kGap));
  }
  int rows(int64_t count) const { return static_cast<int>((count + cols - 1) / cols); }
};

WrapLayout wrapLayout(int64_t count, float aspect) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  WrapLayout layout;
  layout.label_h = ImGui::GetTextLineHeightWithSpacing();
  float best_area = 0.0f;
  for (int cols = 1; cols <= count; ++cols) {
    const int rows = static_cast<int>((count + cols - 1) / cols);
    const float slot_w = (avail.x - kBarWidth) / cols - kGap;
    const float slot_h = (avail.y - 4) / rows - layout.label_h - kGap;
    const float h = std::min(slot_h, slot_w / aspect);
    const float w = std::min(slot_w, h * aspect * kMaxStretch);
    if (h > 0 && w * h > best_area) {
      best_area = w * h;
      layout.cols = cols;
      layout.tile = fitTile(slot_w, slot_h, aspect);
    }
  }
  // Centre the tiles and colour bar when they leave width unused.
  const float spare = std::max(0.0f, avail.x - kBarWidth - layout.cols * (layout.tile.w + kGap));
  layout.origin = ImVec2(ImGui::GetCursorScreenPos().x + std::floor(spare / 2), ImGui::GetCursorScreenPos().y);
  return layout;
}

// Wrapping grid: choose the column count that covers the most area with tiles, each
// labelled ("head h", or "L l H h" with several layers) above it.
void drawHeadGrid(AppState& state, const ViewModel& view, const std::vector<GridEntry>& entries,
                  const ValueRange& range, float aspect) {
  const int64_t count = static_cast<int64_t>(entries.size());
  const WrapLayout layout = wrapLayout(count, aspect);
  const int best_cols = layout.cols;
  const TileSize tile = layout.tile;
  const float label_h = layout.label_h;
  const ImVec2 origin = layout.origin;
  state.view.grid_columns = best_cols;
  const ViewFocus& focus = state.view.focus;
  const bool several_layers = view.layers > 1;
  const AttentionTrace* trace = state.compute.trace();
  const bool grouped = trace && trace->G != trace->H && trace->H == view.H;  // label the shared K/V head
  const auto labels = [&](int64_t layer, int64_t head) {  // longest first
    const std::string h = std::to_string(head);
    const std::string base = several_layers ? "L" + std::to_string(layer) + " H" + h : "head " + h;
    if (!grouped) return std::vector<std::string>{base};
    const std::string kv = std::to_string(kvHeadOf(head, view.H, trace->G));
    return std::vector<std::string>{base + "  kv " + kv, base + " kv" + kv, "H" + h + " kv" + kv};
  };
  // One form for every tile, the longest the widest label fits: never into the next label.
  const size_t form = firstFitting(labels(view.layers - 1, view.H - 1), tile.w);
  for (int64_t k = 0; k < count; ++k) {
    const auto [layer, head] = entries[k];
    const ImVec2 pos = layout.tilePos(k);
    ImGui::SetCursorScreenPos(pos);
    const bool focused = head == focus.head && layer == focus.layer;
    const std::string name = several_layers ? "grid_tile_" + std::to_string(layer) + "_" + std::to_string(head)
                                            : "grid_tile_" + std::to_string(head);
    coloredLabel(state.script.layout, "grid_label_" + name.substr(std::string("grid_tile_").size()), focused,
                 fitText(labels(layer, head)[form], tile.w));
    drawTile(state, view, layer, head, ImVec2(pos.x, pos.y + label_h), tile, range, name);
  }
  const int rows = layout.rows(count);
  const ImVec2 side(origin.x + best_cols * (tile.w + kGap), origin.y);
  drawGridSide(state, side, origin.y + label_h, rows * (tile.h + label_h + kGap) - label_h - kGap, range);
}

// Rollout or flow chosen: one tile per layer, the map after it (output positions x input
// tokens), on one colour scale; a click focuses that layer.
void drawLayerMapsGrid(AppState& state, const ViewModel& view, const ViewTextures::AcrossLayers& maps) {
  const MapKindInfo& info = mapKindInfo(maps.kind);
  const WrapLayout layout = wrapLayout(view.layers, 1.0f);
  state.view.grid_columns = layout.cols;
  const ValueRange range{0.0f, maps.max_all > 0.0f ? maps.max_all : 1.0f};
  for (int64_t l = 0; l < view.layers; ++l) {
    const ImVec2 pos = layout.tilePos(l);
    const bool focused = l == state.view.focus.layer;
    ImGui::SetCursorScreenPos(pos);
    coloredLabel(state.script.layout, "layer_map_label_" + std::to_string(l), focused,
                 std::string(info.label) + " after " + view.maps[l].name);
    ImGui::SetCursorScreenPos(ImVec2(pos.x, pos.y + layout.label_h));
    HeatmapView map;
    map.texture = maps.maps[static_cast<size_t>(l)];
    map.rows = map.cols = view.L;
    map.colormap = state.settings.prob_colormap;
    map.range = range;
    map.outlined = focused;
    map.name = std::string("grid_") + info.name + "_" + std::to_string(l);
    showResultState(state, map);
    const HeatmapHit hit = drawHeatmap(heatmapCanvas(state), map, ImVec2(layout.tile.w, layout.tile.h));
    if (hit.hovered) {
      state.view.hover_next = {hit.row, hit.col};
      ImGui::SetTooltip("%s: click to focus", acrossLayersTitle(maps.kind, view.maps[l].name).c_str());
    }
    if (hit.clicked && !focused) setFocus(state, ViewFocus{l, state.view.focus.head, state.view.focus.batch_item});
  }
  const float tiles_h = layout.rows(view.layers) * (layout.tile.h + layout.label_h + kGap) - layout.label_h - kGap;
  ImGui::SetCursorScreenPos(ImVec2(layout.origin.x + layout.cols * (layout.tile.w + kGap) + 4, layout.origin.y + layout.label_h));
  drawColorBar(heatmapCanvas(state), {state.settings.prob_colormap, range, false, "%.2g", ""},
               ImVec2(kBarWidth - 8, std::max(40.0f, std::min(tiles_h, 480.0f))));
}

// Several layers: rows = layers (named on the left), columns = heads (numbered on top).
// Tiles never get smaller than 10 px; the panel scrolls when they do not fit.
void drawLayerHeadGrid(AppState& state, const ViewModel& view, const ValueRange& range, float aspect) {
  const int64_t layers = view.layers, H = view.H;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_h = ImGui::GetTextLineHeightWithSpacing();
  float name_w = 0.0f;
  for (const LayerMaps& layer : view.maps) name_w = std::max(name_w, ImGui::CalcTextSize(layer.name.c_str()).x);
  const float row_label_w = std::min(name_w, 140.0f) + 8.0f;
  const float slot_w = (avail.x - kBarWidth - row_label_w) / static_cast<float>(H) - kGap;
  const float slot_h = (avail.y - 4 - label_h) / static_cast<float>(layers) - kGap;
  TileSize tile = fitTile(slot_w, slot_h, aspect);
  tile.w = std::max(tile.w, 10.0f);
  tile.h = std::max(tile.h, 10.0f);
  state.view.grid_columns = static_cast<int>(H);

  beginHeadRows(state.head_scroll.grid);
  const float grid_w = row_label_w + H * (tile.w + kGap);
  const float spare = std::max(0.0f, avail.x - kBarWidth - grid_w);
  const ImVec2 origin(ImGui::GetCursorScreenPos().x + std::floor(spare / 2), ImGui::GetCursorScreenPos().y);
  const ViewFocus& focus = state.view.focus;
  // Column labels: "head h" when it fits over a tile, else just h.
  const bool long_labels = ImGui::CalcTextSize("head 00").x <= tile.w + kGap - 2;
  for (int64_t h = 0; h < H; ++h) {
    ImGui::SetCursorScreenPos(ImVec2(origin.x + row_label_w + h * (tile.w + kGap), origin.y));
    const std::string label = (long_labels ? "head " : "") + std::to_string(h);
    coloredLabel(state.script.layout, "grid_head_label_" + std::to_string(h), h == focus.head, label);
  }
  for (int64_t l = 0; l < layers; ++l) {
    const float y = origin.y + label_h + l * (tile.h + kGap);
    // Row label, right-aligned and centred on the row; long names are cut with "...".
    const std::string name = fitText(view.maps[l].name, row_label_w - 8);
    const float text_w = ImGui::CalcTextSize(name.c_str()).x;
    ImGui::SetCursorScreenPos(ImVec2(origin.x + row_label_w - 8 - text_w, y + (tile.h - ImGui::GetTextLineHeight()) / 2));
    coloredLabel(state.script.layout, "grid_layer_label_" + std::to_string(l), l == focus.layer, name);
    for (int64_t h = 0; h < H; ++h) {
      drawTile(state, view, l, h, ImVec2(origin.x + row_label_w + h * (tile.w + kGap), y), tile, range,
               "grid_tile_" + std::to_string(l) + "_" + std::to_string(h));
      headRowDrawn(state, state.head_scroll.grid, l, h, H);
    }
  }
  endHeadRows(state, state.head_scroll.grid);
  const ImVec2 side(origin.x + grid_w, origin.y);
  drawGridSide(state, side, origin.y + label_h, layers * (tile.h + kGap) - kGap, range);
  // Room for the last row, so the window scrolls to it when the tiles do not fit.
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + label_h + layers * (tile.h + kGap)));
  ImGui::Dummy(ImVec2(1, 1));
}

}  // namespace

void drawHeadGridPanel(AppState& state) {
  const ViewModel* view = state.compute.view.get();
  const bool several_layers = view && view->layers > 1;
  if (beginPanelWindow(state, several_layers ? "Layers x heads###Heads" : "Heads###Heads", "head_grid",
                       several_layers ? 0 : ImGuiWindowFlags_NoScrollbar)) {
    const ViewTextures& tex = state.gpu.textures;
    if (!view || tex.probs.empty()) {
      ImGui::TextDisabled("no attention computed yet");
      ImGui::End();
      return;
    }
    // Rollout or flow chosen and built: the grid shows it, one tile per layer.
    const ViewTextures::AcrossLayers* across = tex.builtFrom(view) ? tex.acrossLayers(state.view.map_kind) : nullptr;
    if (across) {
      drawLayerMapsGrid(state, *view, *across);
      ImGui::End();
      return;
    }
    if (overviewShown(state, *view)) {  // many heads: one coloured cell each (features/overview)
      drawOverview(state, *view);
      ImGui::End();
      return;
    }
    const ValueRange range{state.settings.log_scale ? tex.prob_min_positive : 0.0f, tex.prob_max};
    const float aspect = std::max(static_cast<float>(view->S) / static_cast<float>(view->L), 0.25f);
    if (several_layers && !state.view.table.order_grid) drawLayerHeadGrid(state, *view, range, aspect);
    else drawHeadGrid(state, *view, gridEntries(state, *view), range, aspect);
  }
  ImGui::End();
}

void headGridToJson(const AppState& state, nlohmann::json& line) {
  line["grid_columns"] = state.view.grid_columns;
  nlohmann::json ablated = nlohmann::json::array();  // the heads drawn struck through: "L1H3 zero"
  const ViewModel* view = state.compute.view.get();
  for (int64_t n = 0; view && n < static_cast<int64_t>(view->ablated_heads.size()); ++n)
    if (const uint8_t mode = view->ablated_heads[n]; mode != kNotAblated)
      ablated.push_back("L" + std::to_string(n / view->H) + "H" + std::to_string(n % view->H) + (mode == kAblatedMean ? " mean" : " zero"));
  line["ablated_heads"] = ablated;
}

}  // namespace attnscope
