// Figure rendering: pixel-exact PNG cells, masked style, sizes, labels, SVG structure,
// raw matrices (CSV / tensor) and the builders' colour scales.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "figure_test_util.h"

namespace attnscope {
namespace {

using test::causalTrace;
using test::viewOf;
using test::countOccurrences;
using test::rampFigure;

constexpr Rgb kWhite = {255, 255, 255};

bool isGrey(const Rgb& c) { return c == kMaskedColor || c == kMaskedHatchColor; }

// Expected colour of a value, straight from the table and the documented float rule
// (t = clamp((v - lo) / (hi - lo)), index = floor(t * 255 + 0.5)), not via cellColor().
Rgb expectedColor(Colormap map, float v, float lo, float hi) {
  float t = (v - lo) / (hi - lo);
  t = std::min(1.0f, std::max(0.0f, t));
  return colormapTable(map)[static_cast<int>(std::floor(t * 255.0f + 0.5f))];
}

struct Rendered {
  FigureGeometry geometry;
  RgbImage image;
};

Rendered renderPng(const Figure& figure) {
  return {figureGeometry(figure), decodePng(renderFigurePng(figure))};
}

// Every pixel of every cell (not only the centre) is the cell's expected colour.
void expectCellsExact(const Figure& figure, const Rendered& out, size_t panel,
                      const std::function<Rgb(int64_t, int64_t)>& expected) {
  const int cell = out.geometry.cell_px;
  for (int64_t r = 0; r < figure.rows; ++r) {
    for (int64_t c = 0; c < figure.cols; ++c) {
      const Rgb want = expected(r, c);
      const int x0 = out.geometry.panel_x[panel] + static_cast<int>(c) * cell;
      const int y0 = out.geometry.panel_y[panel] + static_cast<int>(r) * cell;
      int wrong = 0;
      for (int y = y0; y < y0 + cell; ++y) {
        for (int x = x0; x < x0 + cell; ++x) wrong += out.image.at(x, y) != want;
      }
      ASSERT_EQ(wrong, 0) << "cell (" << r << ", " << c << ") of panel " << panel;
    }
  }
}

TEST(FigureRender, KnownMatrixMapsEveryCellToItsTableEntry) {
  for (Colormap map : {Colormap::Viridis, Colormap::Cividis, Colormap::Magma, Colormap::Diverging}) {
    Figure figure = rampFigure(5, 7, 9);
    figure.colormap = map;
    const Rendered out = renderPng(figure);
    expectCellsExact(figure, out, 0, [&](int64_t r, int64_t c) {
      return expectedColor(map, figure.panels[0].values[r * 7 + c], 0.0f, 1.0f);
    });
  }
  // Spot values by hand: 0 -> entry 0, 1 -> entry 255, 0.5 -> entry 128 (floor(127.5 + 0.5)).
  Figure figure = rampFigure(1, 3, 20);
  figure.panels[0].values = {0.0f, 1.0f, 0.5f};
  const Rendered out = renderPng(figure);
  const auto centre = [&](int c) {
    return out.image.at(out.geometry.panel_x[0] + c * 20 + 10, out.geometry.panel_y[0] + 10);
  };
  EXPECT_EQ(centre(0), (Rgb{68, 1, 84}));
  EXPECT_EQ(centre(1), (Rgb{253, 231, 37}));
  EXPECT_EQ(centre(2), colormapTable(Colormap::Viridis)[128]);
}

TEST(FigureRender, ValuesOutsideTheRangeClamp) {
  Figure figure = rampFigure(1, 4, 10);
  figure.panels[0].values = {-5.0f, 0.25f, 7.0f, NAN};
  figure.low = 0.0f;
  figure.high = 0.5f;
  const Rendered out = renderPng(figure);
  const RgbTable& table = colormapTable(Colormap::Viridis);
  expectCellsExact(figure, out, 0, [&](int64_t, int64_t c) {
    return std::array<Rgb, 4>{table[0], table[128], table[255], table[0]}[c];
  });
}

TEST(FigureRender, CellSizeAndMatrixSizeAreExact) {
  for (int64_t cell : {1, 2, 5, 13}) {
    Figure figure = rampFigure(6, 11, cell);
    const Rendered out = renderPng(figure);
    ASSERT_EQ(out.geometry.cell_px, cell);
    EXPECT_EQ(out.image.width, out.geometry.width);
    EXPECT_EQ(out.image.height, out.geometry.height);
    const int x0 = out.geometry.panel_x[0], y0 = out.geometry.panel_y[0];
    const int w = static_cast<int>(11 * cell), h = static_cast<int>(6 * cell);
    // First cell: a run of exactly `cell` pixels in each direction (the next cell differs).
    const Rgb first = out.image.at(x0, y0);
    EXPECT_EQ(out.image.at(x0 + cell - 1, y0 + cell - 1), first);
    EXPECT_NE(out.image.at(x0 + cell, y0), first);
    EXPECT_NE(out.image.at(x0, y0 + cell), first);
    // The matrix region is exactly cols*cell x rows*cell: background just outside it.
    EXPECT_EQ(out.image.at(x0 - 1, y0 + h / 2), kWhite);
    EXPECT_EQ(out.image.at(x0 + w, y0 + h / 2), kWhite);
    EXPECT_EQ(out.image.at(x0 + w / 2, y0 - 1), kWhite);
    EXPECT_EQ(out.image.at(x0 + w / 2, y0 + h), kWhite);
    EXPECT_EQ(out.image.at(x0 + w - 1, y0 + h - 1), colormapTable(Colormap::Viridis)[255]);
    expectCellsExact(figure, out, 0, [&](int64_t r, int64_t c) {
      return expectedColor(Colormap::Viridis, figure.panels[0].values[r * 11 + c], 0.0f, 1.0f);
    });
  }
}

TEST(FigureRender, DefaultCellSizeMakesTheMatrixAtLeast512Px) {
  EXPECT_EQ(defaultCellPx(10, 10, 1), 52);  // ceil(512 / 10)
  EXPECT_EQ(defaultCellPx(9, 9, 1), 57);
  EXPECT_EQ(defaultCellPx(4, 16, 1), 32);
  EXPECT_EQ(defaultCellPx(512, 3, 1), 1);
  EXPECT_EQ(defaultCellPx(2000, 2000, 1), 1);
  EXPECT_EQ(defaultCellPx(10, 10, 4), 26);  // grid tiles >= 256 px
  for (int64_t n : {1, 3, 7, 10, 33, 100, 511, 513}) {
    const int64_t cell = defaultCellPx(n, 1, 1);
    EXPECT_GE(n * cell, 512) << n;
    EXPECT_LT(n * (cell - 1), cell > 1 ? 512 : 1) << n;  // the smallest such integer
  }
  Figure figure = rampFigure(10, 10, 0);
  EXPECT_EQ(figureGeometry(figure).cell_px, 52);
}

TEST(FigureRender, OnePixelCellsAreMaskedWithoutHatch) {
  const AttentionTrace trace = causalTrace(1, 1, 6, 6);
  Figure figure = probsFigure(viewOf(trace), 0, 0, 0, Colormap::Viridis);
  figure.cell_px = 1;  // as the shader: a 1 px hatch would only read as noise
  const Rendered out = renderPng(figure);
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j = i + 1; j < 6; ++j) {
      EXPECT_EQ(out.image.at(out.geometry.panel_x[0] + j, out.geometry.panel_y[0] + i), kMaskedColor) << i << "," << j;
    }
  }
}

TEST(FigureRender, CausalProbsHaveTheMaskedStyleAboveTheDiagonalOnly) {
  const AttentionTrace trace = causalTrace(1, 2, 6, 6);
  for (int64_t h = 0; h < 2; ++h) {
    Figure figure = probsFigure(viewOf(trace), 0, 0, h, Colormap::Magma);
    figure.cell_px = 11;
    const Rendered out = renderPng(figure);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 6; ++j) {
        const Rgb c = out.image.at(out.geometry.panel_x[0] + j * 11 + 5, out.geometry.panel_y[0] + i * 11 + 5);
        if (j > i) {
          // The documented hatch rule shared with the shader: lighter grey where (row+col) even.
          EXPECT_EQ(c, (i + j) % 2 == 0 ? kMaskedHatchColor : kMaskedColor) << i << "," << j;
        } else {
          EXPECT_FALSE(isGrey(c)) << i << "," << j;
          // Range [0, max over heads] = [0, 1] (row 0 has probability 1).
          EXPECT_EQ(c, expectedColor(Colormap::Magma, 1.0f / (i + 1), 0.0f, 1.0f)) << i << "," << j;
        }
      }
    }
  }
}

TEST(FigureRender, CausalScoresAreMaskedAndUseASymmetricDivergingRange) {
  const AttentionTrace trace = causalTrace(1, 3, 5, 5);
  const Figure figure = scoresFigure(viewOf(trace), 0, 0, 2);
  EXPECT_EQ(figure.colormap, Colormap::Diverging);
  // head 2: scores 3 * (j - i/2) on j <= i; max |.| = 3 * 4 / 2... over i=4: j=4 -> 6, j=0 -> -6.
  ASSERT_TRUE(figure.low && figure.high);
  EXPECT_FLOAT_EQ(*figure.high, 6.0f);
  EXPECT_FLOAT_EQ(*figure.low, -6.0f);
  const Rendered out = renderPng(figure);
  expectCellsExact(figure, out, 0, [&](int64_t i, int64_t j) {
    if (j > i) return (i + j) % 2 == 0 ? kMaskedHatchColor : kMaskedColor;
    return expectedColor(Colormap::Diverging, static_cast<float>(3 * (j - i / 2.0)), -6.0f, 6.0f);
  });
}

TEST(FigureRender, MaskFigureColoursAllowedCellsAndGreysBlockedOnes) {
  const AttentionTrace trace = causalTrace(2, 1, 4, 6);
  const Figure figure = maskFigure(viewOf(trace), 0, 1, Colormap::Viridis);
  const Rendered out = renderPng(figure);
  expectCellsExact(figure, out, 0, [&](int64_t i, int64_t j) {
    if (j > i) return (i + j) % 2 == 0 ? kMaskedHatchColor : kMaskedColor;
    return colormapTable(Colormap::Viridis)[255];
  });
}

TEST(FigureRender, ProbsShareOneRangeOverAllHeadsOfTheBatchItem) {
  AttentionTrace trace = causalTrace(1, 2, 3, 3);
  for (float& p : trace.probs.data) p *= 0.5f;  // head 0 max 0.5
  for (int64_t k = 9; k < 18; ++k) trace.probs.data[k] *= 1.6f;  // head 1 max 0.8
  EXPECT_FLOAT_EQ(*probsFigure(viewOf(trace), 0, 0, 0, Colormap::Viridis).high, 0.8f);
  EXPECT_FLOAT_EQ(*gridFigure(viewOf(trace), {0}, 0, Colormap::Viridis).high, 0.8f);
  const Figure log_figure = probsFigure(viewOf(trace), 0, 0, 0, Colormap::Viridis, true);
  EXPECT_TRUE(log_figure.log_scale);
  EXPECT_FLOAT_EQ(*log_figure.low, 0.5f / 3.0f);  // smallest positive allowed probability
  // Log scale: low -> entry 0, high -> 255, geometric mean -> 128.
  const float low = *log_figure.low, high = *log_figure.high;
  EXPECT_EQ(colorIndex(log_figure, low), 0);
  EXPECT_EQ(colorIndex(log_figure, high), 255);
  EXPECT_EQ(colorIndex(log_figure, std::sqrt(low * high)), 128);
  EXPECT_EQ(colorIndex(log_figure, 0.0f), 0);
}

TEST(FigureRender, DropoutTraceShowsTheDroppedProbabilities) {
  AttentionTrace trace = causalTrace(1, 1, 3, 3);
  trace.dropout_applied = true;
  trace.probs_dropped = Tensor(trace.probs.shape);
  trace.probs_dropped.data[0] = 2.0f;
  const Figure figure = probsFigure(viewOf(trace), 0, 0, 0, Colormap::Viridis);
  EXPECT_EQ(figure.panels[0].values, trace.probs_dropped.data);
  EXPECT_NE(figure.title.find("dropout"), std::string::npos);
}

TEST(FigureRender, GridHasOneTilePerHeadWithItsOwnCells) {
  const AttentionTrace trace = causalTrace(1, 5, 4, 4);
  Figure figure = gridFigure(viewOf(trace), {0}, 0, Colormap::Viridis);
  ASSERT_EQ(figure.panels.size(), 5u);
  EXPECT_EQ(figure.panels[3].title, "head 3");
  figure.cell_px = 8;
  const Rendered out = renderPng(figure);
  ASSERT_EQ(out.geometry.panel_x.size(), 5u);
  std::set<std::pair<int, int>> origins;
  for (size_t p = 0; p < 5; ++p) {
    origins.insert({out.geometry.panel_x[p], out.geometry.panel_y[p]});
    expectCellsExact(figure, out, p, [&](int64_t i, int64_t j) {
      if (j > i) return (i + j) % 2 == 0 ? kMaskedHatchColor : kMaskedColor;
      return expectedColor(Colormap::Viridis, 1.0f / (i + 1), 0.0f, 1.0f);
    });
  }
  EXPECT_EQ(origins.size(), 5u);  // tiles do not overlap
  // 3 columns (ceil(sqrt(5))), 2 rows.
  std::set<int> xs, ys;
  for (const auto& [x, y] : origins) xs.insert(x), ys.insert(y);
  EXPECT_EQ(xs.size(), 3u);
  EXPECT_EQ(ys.size(), 2u);
}

// Count of non-background pixels inside a rectangle.
int inkIn(const RgbImage& image, int x0, int y0, int x1, int y1) {
  int ink = 0;
  for (int y = std::max(0, y0); y < std::min(image.height, y1); ++y) {
    for (int x = std::max(0, x0); x < std::min(image.width, x1); ++x) ink += image.at(x, y) != kWhite;
  }
  return ink;
}

TEST(FigureRender, TitleLabelsAndColourBarLeaveInkInTheirMargins) {
  Figure figure = rampFigure(4, 5, 30);
  const Rendered out = renderPng(figure);
  const int x0 = out.geometry.panel_x[0], y0 = out.geometry.panel_y[0];
  const int w = 5 * 30, h = 4 * 30;
  // Query labels left of each row, key labels under each column.
  for (int r = 0; r < 4; ++r) EXPECT_GT(inkIn(out.image, 0, y0 + r * 30, x0, y0 + (r + 1) * 30), 10) << r;
  for (int c = 0; c < 5; ++c) {
    EXPECT_GT(inkIn(out.image, x0 + c * 30, y0 + h, x0 + (c + 1) * 30, out.image.height), 10) << c;
  }
  EXPECT_GT(inkIn(out.image, 0, 0, out.image.width, y0), 100);  // title
  // Colour bar right of the matrix, as high as the matrix: the table's last entry on top,
  // its first at the bottom.
  int bar_x = -1;
  for (int x = x0 + w; x < out.image.width && bar_x < 0; ++x) {
    if (out.image.at(x, y0) == colormapTable(Colormap::Viridis)[255]) bar_x = x;
  }
  ASSERT_GT(bar_x, 0);
  EXPECT_EQ(out.image.at(bar_x, y0 + h - 1), colormapTable(Colormap::Viridis)[0]);
  EXPECT_EQ(out.image.at(bar_x, y0 - 1), (Rgb{60, 60, 60}));  // the outline around the bar
  EXPECT_EQ(out.image.at(bar_x, y0 + h), (Rgb{60, 60, 60}));
  EXPECT_EQ(out.image.at(bar_x, y0 - 2), kWhite);
  EXPECT_GT(inkIn(out.image, bar_x + 20, y0, out.image.width, y0 + h), 50);  // tick labels
  // Without labels (a blank figure of the same size), the label margins stay emptier.
  Figure unlabeled = figure;
  unlabeled.row_labels.assign(4, "");
  unlabeled.col_labels.assign(5, "");
  const Rendered bare = renderPng(unlabeled);
  EXPECT_LT(inkIn(bare.image, 0, bare.geometry.panel_y[0], bare.geometry.panel_x[0], bare.geometry.panel_y[0] + h),
            inkIn(out.image, 0, y0, x0, y0 + h));
}

TEST(FigureRender, SmallCellsThinTheLabels) {
  // 60 rows at 3 px: labels cannot all fit; the shown ones must not overlap (>= 9 px apart).
  Figure figure = rampFigure(60, 60, 3);
  const std::string svg = renderFigureSvg(figure);
  const size_t shown = countOccurrences(svg, ">q");
  EXPECT_GT(shown, 3u);
  EXPECT_LE(shown * 9, 60u * 3u + 9);
  EXPECT_NE(svg.find(">q0<"), std::string::npos);
}

TEST(FigureRender, SvgHasOneCellRectPerCellAndTheTokensAsText) {
  Figure figure = rampFigure(3, 4, 12);
  figure.row_labels = {"The", "caf\u00e9", "a<b&\"c\""};
  figure.col_labels = {"\u732b", "sat", "on", "mat"};
  const std::string svg = renderFigureSvg(figure);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(countOccurrences(svg, "class=\"cell\""), 12u);
  for (const char* token : {">The</text>", ">caf\u00e9</text>", ">a&lt;b&amp;&quot;c&quot;</text>",
                            ">\u732b</text>", ">sat</text>", ">mat</text>"}) {
    EXPECT_NE(svg.find(token), std::string::npos) << token;
  }
  EXPECT_NE(svg.find("WenQuanYi Micro Hei"), std::string::npos);  // CJK label font
  // Cells in row-major order with the exact table colours.
  size_t at = 0;
  for (int64_t k = 0; k < 12; ++k) {
    at = svg.find("class=\"cell\"", at + 1);
    const size_t fill = svg.find("fill=\"#", at);
    const Rgb want = expectedColor(Colormap::Viridis, figure.panels[0].values[k], 0.0f, 1.0f);
    char hex[8];
    std::snprintf(hex, sizeof hex, "#%02x%02x%02x", want[0], want[1], want[2]);
    EXPECT_EQ(svg.substr(fill + 6, 7), hex) << k;
  }
  // Well-formed XML, checked by a real parser when Debian's xmllint is there.
  if (std::system("command -v xmllint > /dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed";
  const std::string path = test::freshDir("svg") + "/figure.svg";
  writeFileAtomic(path, svg);
  EXPECT_EQ(std::system(("xmllint --noout '" + path + "'").c_str()), 0);
}

TEST(FigureRender, SvgStaysWellFormedWithControlCharactersAndBrokenUtf8) {
  Figure figure = rampFigure(2, 2, 10);
  figure.row_labels = {std::string("a\x01z"), std::string("\xff\xfe bad")};
  const std::string svg = renderFigureSvg(figure);
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
  EXPECT_EQ(svg.find('\xff'), std::string::npos);
  if (std::system("command -v xmllint > /dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed";
  const std::string path = test::freshDir("svg_bad") + "/figure.svg";
  writeFileAtomic(path, svg);
  EXPECT_EQ(std::system(("xmllint --noout '" + path + "'").c_str()), 0);
}

TEST(FigureRender, SvgOfTheGridCountsEveryTilesCells) {
  const AttentionTrace trace = causalTrace(1, 4, 3, 5);
  const std::string svg = renderFigureSvg(gridFigure(viewOf(trace), {0}, 0, Colormap::Cividis));
  EXPECT_EQ(countOccurrences(svg, "class=\"cell\""), 4u * 3u * 5u);
  for (int h = 0; h < 4; ++h) EXPECT_NE(svg.find(">head " + std::to_string(h) + "</text>"), std::string::npos);
}

// The ink of a rectangle as a bitmap cropped to its ink's bounding box (background = 0).
std::vector<std::vector<uint8_t>> inkShape(const RgbImage& image, int x0, int y0, int x1, int y1) {
  int left = x1, right = x0 - 1, top = y1, bottom = y0 - 1;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      if (image.at(x, y) != kWhite) left = std::min(left, x), right = std::max(right, x), top = std::min(top, y),
                                    bottom = std::max(bottom, y);
  std::vector<std::vector<uint8_t>> shape;
  for (int y = top; y <= bottom; ++y) {
    shape.emplace_back();
    for (int x = left; x <= right; ++x) shape.back().push_back(image.at(x, y) != kWhite);
  }
  return shape;
}

// CJK labels are drawn with a font that has them: three different ideographs leave three
// different ink shapes, none of them the font's missing-glyph box (which every missing
// character shares), drawn here from U+31350 (CJK Extension H, in no font on the system).
TEST(FigureRender, CjkLabelsRenderWithInk) {
  Figure figure = rampFigure(4, 2, 40);
  figure.row_labels = {"\u6ce8", "\u610f", "\u529b", "\U00031350"};
  const Rendered out = renderPng(figure);
  const int x0 = out.geometry.panel_x[0], y0 = out.geometry.panel_y[0];
  std::vector<std::vector<std::vector<uint8_t>>> shapes;
  for (int r = 0; r < 4; ++r) {
    EXPECT_GT(inkIn(out.image, 0, y0 + r * 40, x0, y0 + (r + 1) * 40), 30) << figure.row_labels[r];
    shapes.push_back(inkShape(out.image, 0, y0 + r * 40, x0, y0 + (r + 1) * 40));
  }
  const auto& missing = shapes[3];
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(shapes[r] != missing) << figure.row_labels[r] << " is drawn as the missing-glyph box (tofu)";
    for (int q = 0; q < r; ++q)
      EXPECT_TRUE(shapes[r] != shapes[q]) << figure.row_labels[q] << " and " << figure.row_labels[r]
                                      << " leave the same ink: both drawn as the missing-glyph box (tofu)";
  }
}

TEST(FigureRender, EncodePngRoundTripsEveryPixel) {
  RgbImage image;
  image.width = 5;
  image.height = 3;
  for (int k = 0; k < 15; ++k) image.pixels.push_back({static_cast<uint8_t>(k * 17), static_cast<uint8_t>(255 - k), 7});
  const RgbImage back = decodePng(encodePng(image));
  EXPECT_EQ(back.width, 5);
  EXPECT_EQ(back.height, 3);
  EXPECT_EQ(back.pixels, image.pixels);
}

TEST(FigureRender, PdfIsAPdf) {
  const std::string pdf = renderFigurePdf(rampFigure(3, 3, 20));
  EXPECT_EQ(pdf.rfind("%PDF-", 0), 0u);
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
  // Large matrices are embedded as an image rather than one rect per cell.
  EXPECT_EQ(renderFigurePdf(rampFigure(300, 300, 2)).rfind("%PDF-", 0), 0u);
}

TEST(FigureRender, CsvHoldsLabelsAndEveryValueIncludingMinusInf) {
  const AttentionTrace trace = causalTrace(1, 1, 3, 3);
  Figure figure = scoresFigure(viewOf(trace), 0, 0, 0);
  figure.col_labels[1] = "a,\"b\"";
  const std::string csv = matrixCsv(figure);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "query\\key,k0,\"a,\"\"b\"\"\",k2");
  for (int64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream fields(line);
    std::string field;
    std::getline(fields, field, ',');
    EXPECT_EQ(field, "t" + std::to_string(i));
    for (int64_t j = 0; j < 3; ++j) {
      std::getline(fields, field, ',');
      const float want = trace.scores.data[i * 3 + j];
      if (std::isinf(want)) {
        EXPECT_EQ(field, "-inf");
      } else {
        EXPECT_EQ(std::strtof(field.c_str(), nullptr), want) << field;
      }
    }
  }
  EXPECT_FALSE(std::getline(in, line));
}

TEST(FigureRender, MatrixTensorIsTheValuesWithTheirShape) {
  const AttentionTrace trace = causalTrace(2, 3, 4, 5);
  const Tensor one = matrixTensor(probsFigure(viewOf(trace), 0, 1, 2, Colormap::Viridis));
  EXPECT_EQ(one.shape, (Shape{4, 5}));
  EXPECT_EQ(one.data, std::vector<float>(trace.probs.data.begin() + (1 * 3 + 2) * 20,
                                         trace.probs.data.begin() + (1 * 3 + 3) * 20));
  const Tensor grid = matrixTensor(gridFigure(viewOf(trace), {0}, 1, Colormap::Viridis));
  EXPECT_EQ(grid.shape, (Shape{3, 4, 5}));
  EXPECT_EQ(grid.data, std::vector<float>(trace.probs.data.begin() + 60, trace.probs.data.end()));
}

TEST(FigureRender, BadFiguresAndOutOfRangeRequestsAreInputErrors) {
  const AttentionTrace trace = causalTrace(1, 2, 3, 3);
  EXPECT_THROW(probsFigure(viewOf(trace), 0, 0, 2, Colormap::Viridis), InputError);
  EXPECT_THROW(probsFigure(viewOf(trace), 0, 1, 0, Colormap::Viridis), InputError);
  try {
    scoresFigure(viewOf(trace), 0, 0, 5);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "head 5 is out of range (the model has 2 heads: 0-1)");
  }
  Figure empty;
  EXPECT_THROW(renderFigurePng(empty), InputError);
  Figure ragged = rampFigure(2, 2, 4);
  ragged.panels[0].values.pop_back();
  EXPECT_THROW(renderFigureSvg(ragged), InputError);
  EXPECT_THROW(renderFigurePng(rampFigure(10, 10, 5000)), InputError);  // 50000 px wide
  EXPECT_THROW(renderFigureSvg(rampFigure(1100, 1000, 1)), InputError);  // > 1M rects
  EXPECT_THROW(decodePng("not a png"), InputError);
}

}  // namespace
}  // namespace attnscope
