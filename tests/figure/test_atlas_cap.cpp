// capFigureSize (issue 22 item 17): the grid atlas' pictures at most kMaxAtlasSide px on
// the longer side, smaller cells first, then max-pooled blocks checked cell by cell against
// a double-precision reference of the block rule; gridFigure's tile titles name a layer as
// the app does ("h.1 H0"), "L1 H0" when the layer has no name of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "figure_test_util.h"

namespace attnscope {
namespace {

// rows x cols panels in `columns` per row; value (p, r, c) = sin-hash in [0, 1); cells with
// (r / 7 + c / 5) % 4 == 0 masked, and the whole top-left 12 x 12 block of panel 0.
Figure atlasFigure(int64_t panels, int64_t columns, int64_t rows, int64_t cols, int64_t cell_px) {
  Figure figure = test::rampFigure(rows, cols, cell_px);
  figure.panels.clear();
  figure.grid_columns = columns;
  for (int64_t p = 0; p < panels; ++p) {
    FigurePanel panel;
    panel.title = "L0 H" + std::to_string(p);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double x = std::sin(12.9898 * (p * rows * cols + r * cols + c)) * 43758.5453;
        panel.values.push_back(static_cast<float>(x - std::floor(x)));
        panel.masked.push_back((r / 7 + c / 5) % 4 == 0 || (p == 0 && r < 12 && c < 12) ? 1 : 0);
      }
    figure.panels.push_back(panel);
  }
  figure.low = 0.0f;
  figure.high = 1.0f;
  return figure;
}

int longerSide(const Figure& figure) {
  const FigureGeometry g = figureGeometry(figure);
  return std::max(g.width, g.height);
}

TEST(AtlasCap, FigureThatFitsIsLeftAlone) {
  EXPECT_FALSE(capFigureSize(atlasFigure(4, 2, 20, 20, 0), kMaxAtlasSide).has_value());
}

TEST(AtlasCap, SmallerCellsBeforePooling) {
  const Figure figure = atlasFigure(2, 2, 30, 30, 16);
  const int64_t max_side = longerSide(figure) * 2 / 3;
  const std::optional<Figure> capped = capFigureSize(figure, max_side);
  ASSERT_TRUE(capped.has_value());
  EXPECT_LE(longerSide(*capped), max_side);
  EXPECT_LT(capped->cell_px, 16);
  EXPECT_GE(capped->cell_px, 8);  // as large as fits: the margins are not scaled
  EXPECT_EQ(capped->rows, figure.rows);
  EXPECT_EQ(capped->cols, figure.cols);
  EXPECT_EQ(capped->panels[1].values, figure.panels[1].values);
  EXPECT_EQ(capped->subtitle, figure.subtitle);
}

TEST(AtlasCap, PooledBlocksKeepEachBlocksLargestAllowedValue) {
  const int64_t rows = 300, cols = 400;
  const Figure figure = atlasFigure(6, 3, rows, cols, 1);
  const int64_t max_side = longerSide(figure) * 3 / 5;
  const std::optional<Figure> capped = capFigureSize(figure, max_side);
  ASSERT_TRUE(capped.has_value());
  EXPECT_LE(longerSide(*capped), max_side);
  EXPECT_EQ(capped->cell_px, 1);
  ASSERT_LT(capped->cols, cols);
  const int64_t block = (cols + capped->cols - 1) / capped->cols;  // cols = ceil(120 / block)
  EXPECT_EQ(capped->rows, (rows + block - 1) / block);
  EXPECT_NE(capped->subtitle.find("each cell the max of up to " + std::to_string(block)), std::string::npos)
      << capped->subtitle;
  EXPECT_EQ(capped->row_labels.size(), static_cast<size_t>(capped->rows));
  EXPECT_EQ(capped->col_labels[1], std::to_string(1 * cols / capped->cols) + "-" +
                                       std::to_string(2 * cols / capped->cols - 1));
  for (size_t p = 0; p < figure.panels.size(); ++p) {
    EXPECT_EQ(capped->panels[p].title, figure.panels[p].title);
    for (int64_t r = 0; r < capped->rows; ++r)
      for (int64_t c = 0; c < capped->cols; ++c) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = r * rows / capped->rows; i < (r + 1) * rows / capped->rows; ++i) {
          for (int64_t j = c * cols / capped->cols; j < (c + 1) * cols / capped->cols; ++j) {
            if (!figure.panels[p].masked[i * cols + j]) best = std::max<double>(best, figure.panels[p].values[i * cols + j]);
          }
        }
        const size_t at = static_cast<size_t>(r * capped->cols + c);
        ASSERT_EQ(capped->panels[p].masked[at], std::isinf(best) ? 1 : 0) << p << " " << r << " " << c;
        if (!std::isinf(best)) {
          ASSERT_EQ(static_cast<double>(capped->panels[p].values[at]), best) << p << " " << r << " " << c;
        }
      }
  }
  EXPECT_EQ(capped->panels[0].masked[0], 1);  // panel 0's masked top-left block stays masked
}

TEST(AtlasCap, TileTitlesNameLayersAsTheAppDoes) {
  ImportedMaps maps;
  maps.maps = Tensor({2, 1, 2, 3, 3});
  for (size_t i = 0; i < maps.maps.data.size(); ++i) maps.maps.data[i] = 1.0f / 3.0f;
  maps.query_tokens = {{"a", "b", "c"}};
  ImportedMaps named = maps;
  named.layer_names = {"h.0", "h.1"};
  const Figure plain = gridFigure(viewFromImported(maps), {0, 1}, 0, Colormap::Viridis);
  const Figure titled = gridFigure(viewFromImported(named), {0, 1}, 0, Colormap::Viridis);
  EXPECT_EQ(plain.panels[2].title, "L1 H0");
  EXPECT_EQ(titled.panels[2].title, "h.1 H0");
  EXPECT_EQ(titled.panels[1].title, "h.0 H1");
}

}  // namespace
}  // namespace attnscope
