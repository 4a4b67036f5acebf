// capFigureSize: a figure (the grid atlas) brought within a printable size, first with
// smaller cells, then with pooled cells (the app's block max, core/view/downsample.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "figure.h"
#include "view/downsample.h"

namespace attnscope {
namespace {

bool fits(const FigureGeometry& g, int64_t max_side) { return std::max(g.width, g.height) <= max_side; }
bool fits(const Figure& figure, int64_t max_side) { return fits(figureGeometry(figure), max_side); }

// Output block n of `out` over `count` cells covers [n * count / out, (n + 1) * count / out).
int64_t blockStart(int64_t n, int64_t count, int64_t out) { return n * count / out; }

// A panel's [rows, cols] cells pooled to [out_rows, out_cols]: each block's largest allowed
// value, masked only when every cell of its block is.
FigurePanel poolPanel(const FigurePanel& panel, int64_t rows, int64_t cols, int64_t out_rows, int64_t out_cols) {
  std::vector<uint8_t> allowed;
  if (!panel.masked.empty())
    for (uint8_t masked : panel.masked) allowed.push_back(masked ? 0 : 1);
  const Tensor pooled =
      maxPool2d(MaskedMap{panel.values.data(), allowed.empty() ? nullptr : allowed.data(), rows, cols, cols}, out_rows,
                out_cols);
  FigurePanel out;
  out.title = panel.title;
  out.values.assign(pooled.data.begin(), pooled.data.end());
  if (panel.masked.empty()) return out;
  out.masked.resize(out.values.size());
  for (size_t i = 0; i < out.values.size(); ++i) {
    out.masked[i] = std::isinf(out.values[i]) && out.values[i] < 0 ? 1 : 0;
    if (out.masked[i]) out.values[i] = 0.0f;  // drawn in the masked style whatever its value
  }
  return out;
}

// A pooled axis' labels: a block of one cell keeps its label, a wider one names its range
// of indices ("4-7").
std::vector<std::string> poolLabels(const std::vector<std::string>& labels, int64_t count, int64_t out) {
  std::vector<std::string> pooled;
  for (int64_t n = 0; n < out; ++n) {
    const int64_t first = blockStart(n, count, out), last = blockStart(n + 1, count, out) - 1;
    if (first == last && static_cast<size_t>(first) < labels.size()) pooled.push_back(labels[first]);
    else pooled.push_back(std::to_string(first) + "-" + std::to_string(last));
  }
  return pooled;
}

Figure pooledFigure(const Figure& figure, int64_t block, int64_t max_side) {
  Figure pooled = figure;
  pooled.cell_px = 1;
  pooled.rows = std::max<int64_t>(1, (figure.rows + block - 1) / block);
  pooled.cols = std::max<int64_t>(1, (figure.cols + block - 1) / block);
  pooled.row_labels = poolLabels(figure.row_labels, figure.rows, pooled.rows);
  pooled.col_labels = poolLabels(figure.col_labels, figure.cols, pooled.cols);
  for (size_t p = 0; p < figure.panels.size(); ++p)
    pooled.panels[p] = poolPanel(figure.panels[p], figure.rows, figure.cols, pooled.rows, pooled.cols);
  const std::string side = std::to_string(block);
  pooled.subtitle += " \u00b7 pooled to fit " + std::to_string(max_side) + " px: each cell the max of up to " + side +
                     " \u00d7 " + side + " (full resolution on request)";
  return pooled;
}

}  // namespace

std::optional<Figure> capFigureSize(const Figure& figure, int64_t max_side) {
  const FigureGeometry g = figureGeometry(figure);
  if (fits(g, max_side)) return std::nullopt;
  const int64_t per_row = std::max<int64_t>(1, figure.grid_columns);
  const int64_t panel_rows = (static_cast<int64_t>(figure.panels.size()) + per_row - 1) / per_row;
  // Pixels of cells along each side, and the room left for them once titles, labels and
  // the colour bar are paid for.
  const double cells_w = static_cast<double>(per_row * figure.cols), cells_h = static_cast<double>(panel_rows * figure.rows);
  const double room_w = max_side - (g.width - cells_w * g.cell_px), room_h = max_side - (g.height - cells_h * g.cell_px);
  const double cell = std::min(room_w / cells_w, room_h / cells_h);  // the cell size that would fit
  const int64_t largest_px = std::min<int64_t>(g.cell_px - 1, static_cast<int64_t>(std::floor(cell)));
  if (largest_px >= 1) {  // copied only when smaller cells may do (an atlas' cells are large)
    Figure capped = figure;
    for (int64_t px = largest_px; px >= 1; --px) {
      capped.cell_px = px;
      if (fits(capped, max_side)) return capped;
    }
  }
  int64_t block = cell > 0 ? std::max<int64_t>(2, static_cast<int64_t>(std::ceil(1.0 / cell))) : 2;
  for (;; block = std::max(block + 1, block * 5 / 4)) {  // wider labels may need a few more steps
    Figure pooled = pooledFigure(figure, block, max_side);
    if (fits(pooled, max_side) || (pooled.rows == 1 && pooled.cols == 1)) return pooled;
  }
}

}  // namespace attnscope
