// What the views show and where the pointer is. The focused (layer, head, batch item) is
// owned here and only here: every change goes through setFocus() (app_state.h), which
// clamps it to the shown result, so panels read it as is and results never write back
// into Settings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "analysis/head_table.h"
#include "config/settings.h"
#include "view/map_kinds.h"
#include "view/zoom.h"

namespace attnscope {

// The cell under the pointer, shared by the score, probability and mask views and the
// head grid (crosshair). row = query index i, col = key index j.
struct HoverCell {
  int64_t row = -1, col = -1;
  bool valid() const { return row >= 0 && col >= 0; }
  bool operator==(const HoverCell& o) const { return row == o.row && col == o.col; }
  bool operator!=(const HoverCell& o) const { return !(*this == o); }
};

// Sizes a focus must fit: [layers, B, H] of the shown result; unknown before the first one.
struct FocusLimits {
  bool known = false;
  int64_t layers = 1, batch = 1, heads = 1;
};

// The head metrics table: how it is sorted, whether the grid follows it, and the order
// (recomputed by updateHeadOrder when the table, batch item or sort change).
struct HeadTableView {
  HeadSort sort;                // set by clicking a column header (or restored from view.json)
  bool sort_to_table = false;   // restored: hand `sort` to the ImGui table on its next draw
  bool order_grid = false;      // "order grid by table"
  std::vector<int64_t> order;   // heads n = layer * H + head of the focused batch item, table order
  uint64_t order_generation = 0;  // what order was computed for (the table's source_stamp, batch item, sort)
  int64_t order_batch = -1;
  HeadSort order_sort;
  std::string filter;           // typed in the table's filter box (analysis/head_filter.h)
  std::string filter_error;     // why a threshold in it is ignored ("" = none)
  std::vector<int64_t> visible;  // the rows of order the filter keeps, in table order
  std::string visible_filter;   // the filter visible was computed for
};

// What the focus panel shows: the focused maps, the compare view or query focus.
enum class FocusTab { Maps, Compare, QueryFocus, Interventions, Patching };
const char* focusTabName(FocusTab tab);  // "maps", "compare", "query_focus", "interventions", "patching" (state log)

// Chosen query rows of the focused batch item, shown across every layer and head as bars
// over the keys, summed or averaged (the
// focus view's query labels and the Query focus tab choose them).
struct QueryFocusView {
  std::vector<int64_t> queries;         // sorted, unique; empty = none chosen
  RowCombine combine = RowCombine::Mean;
};

// One map of the compare view: (layer, head) of the focused batch item, from this run, from
// the mistakes lab's correct run (the same inputs without the mistake), or from this run's
// settings under another mistake (`with`, e.g. NoScaling: a second run, features/compare/compare.h).
struct MapPick {
  int64_t layer = 0, head = 0;
  bool correct_run = false;
  Mistake with = Mistake::None;  // != None: the settings with this mistake instead (not with correct_run)
  bool other_file = false;       // a trained model's run on another file of it (features/compare: its path)
  bool operator==(const MapPick& o) const {
    return layer == o.layer && head == o.head && correct_run == o.correct_run && with == o.with &&
           other_file == o.other_file;
  }
  bool operator!=(const MapPick& o) const { return !(*this == o); }
};

// {"layer", "head", "run": "this" | "correct" | "with:<mistake>" | "other_file"} (state log, view.json,
// exports; an other_file pick is not restored: the file is chosen again).
nlohmann::json pickJson(const MapPick& pick);

// The compare view's choice: A and B (A - B is shown); set to defaults on first opening.
struct CompareView {
  MapPick a, b;
  bool chosen = false;  // false: defaults (focus vs next head, or buggy vs correct run)
};

// Panel sizes the user set by dragging the borders between panels (features/panel_borders),
// as fractions: left and right columns of the window's width, the head metrics table of the
// centre column's width, the head grid, predictions and mask of the panel area's height.
// 0 = the automatic size. Kept in view.json as read; chosenSize (shell/panels.h), called by
// the layout and the panels' size hooks, is the one clamp to what the window allows.
struct PanelSizes {
  float left = 0, right = 0, table = 0, grid = 0, predictions = 0, mask = 0;
  bool operator==(const PanelSizes& o) const {
    return left == o.left && right == o.right && table == o.table && grid == o.grid &&
           predictions == o.predictions && mask == o.mask;
  }
  bool operator!=(const PanelSizes& o) const { return !(*this == o); }
};
// The sizes by name, as view.json and the state log spell them.
struct PanelSizeField {
  const char* name;
  float PanelSizes::*size;
};
inline constexpr PanelSizeField kPanelSizeFields[] = {
    {"left", &PanelSizes::left}, {"right", &PanelSizes::right},        {"table", &PanelSizes::table},
    {"grid", &PanelSizes::grid}, {"predictions", &PanelSizes::predictions}, {"mask", &PanelSizes::mask}};

struct ViewState {
  ViewFocus focus;        // (layer, head, batch item); within the shown result's limits
  // A first start (no saved settings): focus the model's featured head when its first run
  // arrives (focusFeaturedHead, features/focus).
  bool focus_featured_head = false;
  // The map kind chosen (focus view's chooser, a click on a map, the mask panel): the focus
  // view and grid show it, Ctrl+S exports it. Probabilities by default.
  MapKind map_kind = MapKind::Probs;
  HoverCell hover;        // drawn this frame (from the previous frame's pointer)
  HoverCell hover_next;   // collected while drawing this frame
  // A tiled source (its maps are an overview): the real cell under the pointer in the focus
  // view, while hover holds the overview block that contains it.
  HoverCell map_hover, map_hover_next;
  int grid_columns = 1;   // head grid layout, for Up/Down
  // Focus view zoom: the visible window of every focus map (whole() = not zoomed). View
  // state, never saved with the settings; changed only through setZoom (app_state.h).
  CellWindow zoom;
  std::optional<CellWindow> pan_from;  // the window when the current drag began
  HeadTableView table;
  FocusTab tab = FocusTab::Maps;
  bool tab_requested = false;  // select `tab` in the tab bar next frame (shortcut, label click)
  CompareView compare;
  // Model folders opened (Ctrl+O, the command line), newest first, at most kRecentModels;
  // listed under Models and kept in view.json. Changed only through rememberModel.
  std::vector<std::string> recent_models;
  // Model runs: the pinned query row, shared by the maps and the lens (a click pins it) and
  // the predictions panel (it shows that row's predictions when no map is hovered); -1 = the
  // last position. Clamped where it is read; changed through pinQueryRow / unpinQueryRow.
  int64_t selected_query = -1;
  std::string pinned_text;  // the model text when the row was pinned (typing unpins it)
  // Model runs: the focused map's cell a right-click chose (query, key), for its knockout menu.
  std::pair<int64_t, int64_t> knockout_cell{-1, -1};
  PanelSizes panel_sizes;
  // The head grid's overview switched on or off by the user (grid and metrics panels);
  // unset: automatic (kOverviewAutoHeads).
  std::optional<bool> overview_chosen;
  // A generation runs with "follow" (features/generate): views keep its newest token in view.
  bool follow_newest = false;
  QueryFocusView query_choice;  // the Query focus tab's rows; changed through chooseQuery (app_state.h)
};

// More heads than this (layers x H): the grid shows the overview unless the user chose tiles.
inline constexpr int64_t kOverviewAutoHeads = 64;

inline constexpr size_t kRecentModels = 8;
// Puts `folder` first in view.recent_models (once), dropping the oldest beyond kRecentModels;
// false when it was first already.
bool rememberModel(ViewState& view, const std::string& folder);

// The one clamp: each index into [0, limit - 1]; unchanged while the limits are unknown.
ViewFocus clampFocus(ViewFocus focus, const FocusLimits& limits);

}  // namespace attnscope
