// The visible window of a zoomed heatmap: which query rows and key columns the focus view
// shows, and how the wheel (zoom around the pointer) and a drag (pan) move it. Plain
// maths on cell indices, so the app's panels only pass mouse positions in cell units.
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

// Rows [row0, row0 + rows) x keys [col0, col0 + cols) of an [L, S] map. rows = 0 means
// "the whole map" (not zoomed), whatever L and S are.
struct CellWindow {
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  bool whole() const { return rows == 0; }
  bool operator==(const CellWindow& o) const {
    return row0 == o.row0 && rows == o.rows && col0 == o.col0 && cols == o.cols;
  }
  bool operator!=(const CellWindow& o) const { return !(*this == o); }
};

// The window as cells of an [L, S] map: whole() becomes [0, L) x [0, S).
CellWindow resolveWindow(const CellWindow& window, int64_t L, int64_t S);

// The one clamp: at least 1 x 1 cell (kMinZoomCells when the map is that big), inside the
// map, and back to whole() when it covers the whole map.
CellWindow clampWindow(CellWindow window, int64_t L, int64_t S);
inline constexpr int64_t kMinZoomCells = 4;

// Zooms by `factor` (> 1 in, < 1 out) keeping the cell under the pointer under the pointer:
// anchor_row/col are the pointer's position in map cells (fractional, e.g. 10.5 = middle of
// row 10). The aspect of the window (rows : cols) is kept as far as the clamp allows.
CellWindow zoomAround(const CellWindow& window, int64_t L, int64_t S, double anchor_row, double anchor_col,
                      double factor);

// Moves the window by whole cells (positive = towards larger indices), clamped.
CellWindow panBy(const CellWindow& window, int64_t L, int64_t S, int64_t d_rows, int64_t d_cols);

// "rows100-227_keys50-177" (for file names); "" for the whole map.
std::string windowName(const CellWindow& window);

}  // namespace attnscope
