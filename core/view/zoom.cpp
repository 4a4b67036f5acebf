#include "view/zoom.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

CellWindow resolveWindow(const CellWindow& window, int64_t L, int64_t S) {
  if (window.whole()) return {0, L, 0, S};
  return window;
}

CellWindow clampWindow(CellWindow w, int64_t L, int64_t S) {
  if (w.whole() || L <= 0 || S <= 0) return {};
  w.rows = std::clamp<int64_t>(w.rows, std::min(kMinZoomCells, L), L);
  w.cols = std::clamp<int64_t>(w.cols, std::min(kMinZoomCells, S), S);
  w.row0 = std::clamp<int64_t>(w.row0, 0, L - w.rows);
  w.col0 = std::clamp<int64_t>(w.col0, 0, S - w.cols);
  if (w.rows == L && w.cols == S) return {};
  return w;
}

CellWindow zoomAround(const CellWindow& window, int64_t L, int64_t S, double anchor_row, double anchor_col,
                      double factor) {
  const CellWindow w = resolveWindow(window, L, S);
  if (L <= 0 || S <= 0 || !(factor > 0)) return clampWindow(window, L, S);
  // One axis zooms by the factor, the other by the same ratio, so the aspect stays.
  auto scaled = [&](int64_t cells, int64_t limit) {
    const double wanted = static_cast<double>(cells) / factor;
    int64_t n = factor > 1 ? static_cast<int64_t>(std::floor(wanted)) : static_cast<int64_t>(std::ceil(wanted));
    if (n == cells) n += factor > 1 ? -1 : 1;  // every wheel step changes the window
    return std::clamp<int64_t>(n, std::min(kMinZoomCells, limit), limit);
  };
  CellWindow z;
  z.rows = scaled(w.rows, L);
  z.cols = scaled(w.cols, S);
  // The pointer's fraction across the window stays the same.
  const double fr = (anchor_row - static_cast<double>(w.row0)) / static_cast<double>(w.rows);
  const double fc = (anchor_col - static_cast<double>(w.col0)) / static_cast<double>(w.cols);
  z.row0 = static_cast<int64_t>(std::llround(anchor_row - fr * static_cast<double>(z.rows)));
  z.col0 = static_cast<int64_t>(std::llround(anchor_col - fc * static_cast<double>(z.cols)));
  return clampWindow(z, L, S);
}

CellWindow panBy(const CellWindow& window, int64_t L, int64_t S, int64_t d_rows, int64_t d_cols) {
  if (window.whole()) return window;
  CellWindow w = window;
  w.row0 += d_rows;
  w.col0 += d_cols;
  return clampWindow(w, L, S);
}

std::string windowName(const CellWindow& w) {
  if (w.whole()) return "";
  return "rows" + std::to_string(w.row0) + "-" + std::to_string(w.row0 + w.rows - 1) + "_keys" +
         std::to_string(w.col0) + "-" + std::to_string(w.col0 + w.cols - 1);
}

}  // namespace attnscope
