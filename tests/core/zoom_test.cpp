// The focus view's zoom window (core/view/zoom) and the view model's window maps, table
// driven: clamping, zoom around a fixed anchor, pans that stop at the edges, names, and
// windowMap's cells against the plain [L, S] arrays (exact cells up to kTextureMaxSide,
// block-pooled beyond, masked -inf).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "view/downsample.h"
#include "view/view_model.h"
#include "view/zoom.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

void expectInside(const CellWindow& w, int64_t L, int64_t S) {
  const CellWindow r = resolveWindow(w, L, S);
  EXPECT_GE(r.row0, 0);
  EXPECT_GE(r.col0, 0);
  EXPECT_GE(r.rows, std::min(kMinZoomCells, L));
  EXPECT_GE(r.cols, std::min(kMinZoomCells, S));
  EXPECT_LE(r.row0 + r.rows, L);
  EXPECT_LE(r.col0 + r.cols, S);
}

struct ClampCase {
  CellWindow in;
  int64_t L, S;
  CellWindow want;
};

TEST(ZoomTest, ClampKeepsTheWindowInsideTheMap) {
  const std::vector<ClampCase> cases = {
      {{}, 10, 10, {}},                          // whole stays whole
      {{2, 4, 3, 5}, 10, 10, {2, 4, 3, 5}},      // inside: unchanged
      {{8, 4, 9, 5}, 10, 10, {6, 4, 5, 5}},      // past the end: moved back in
      {{-3, 4, -1, 5}, 10, 10, {0, 4, 0, 5}},    // before the start
      {{0, 1, 0, 1}, 10, 10, {0, 4, 0, 4}},      // at least kMinZoomCells
      {{0, 1, 0, 1}, 3, 2, {}},                  // a map smaller than that: whole
      {{0, 10, 0, 10}, 10, 10, {}},              // covers the map: whole
      {{5, 50, 0, 7}, 10, 8, {0, 10, 0, 7}},     // taller than the map
      {{0, 5, 0, 5}, 0, 0, {}},                  // no map yet
  };
  for (const ClampCase& c : cases) {
    const CellWindow got = clampWindow(c.in, c.L, c.S);
    EXPECT_EQ(got, c.want) << "in " << windowName(c.in) << " L=" << c.L << " S=" << c.S << " got " << windowName(got);
  }
}

struct ZoomCase {
  int64_t L, S;
  double anchor_row, anchor_col;  // pointer position in map cells
};

TEST(ZoomTest, WheelZoomKeepsTheCellUnderThePointer) {
  const std::vector<ZoomCase> cases = {
      {64, 64, 10.5, 50.5}, {64, 64, 0.2, 0.2}, {64, 64, 63.9, 63.9}, {2048, 2048, 1500.5, 17.5},
      {100, 37, 50.0, 20.0}, {7, 300, 3.5, 299.5}, {5, 5, 2.5, 2.5},
  };
  for (const ZoomCase& c : cases) {
    CellWindow w;  // whole
    for (int step = 0; step < 40; ++step) {
      const CellWindow before = resolveWindow(w, c.L, c.S);
      const CellWindow next = zoomAround(w, c.L, c.S, c.anchor_row, c.anchor_col, 1.25);
      const CellWindow after = resolveWindow(next, c.L, c.S);
      expectInside(next, c.L, c.S);
      EXPECT_LE(after.rows, before.rows);
      EXPECT_LE(after.cols, before.cols);
      // The anchor cell stays in the window, at about the same fraction across it.
      const int64_t ai = static_cast<int64_t>(c.anchor_row), aj = static_cast<int64_t>(c.anchor_col);
      EXPECT_TRUE(ai >= after.row0 && ai < after.row0 + after.rows) << "step " << step << " " << windowName(next);
      EXPECT_TRUE(aj >= after.col0 && aj < after.col0 + after.cols) << "step " << step << " " << windowName(next);
      const bool clamped = after.row0 == 0 || after.row0 + after.rows == c.L;
      if (!clamped && after.rows < before.rows) {
        const double f_before = (c.anchor_row - before.row0) / before.rows;
        const double f_after = (c.anchor_row - after.row0) / after.rows;
        EXPECT_NEAR(f_before, f_after, 1.0 / after.rows + 1e-9) << "step " << step;
      }
      w = next;
    }
    const CellWindow deepest = resolveWindow(w, c.L, c.S);
    EXPECT_EQ(deepest.rows, std::min(kMinZoomCells, c.L));
    EXPECT_EQ(deepest.cols, std::min(kMinZoomCells, c.S));
    // Zooming out again ends at the whole map.
    for (int step = 0; step < 60; ++step) w = zoomAround(w, c.L, c.S, c.anchor_row, c.anchor_col, 1.0 / 1.25);
    EXPECT_TRUE(w.whole()) << windowName(w);
  }
}

struct PanCase {
  CellWindow start;
  int64_t L, S, d_rows, d_cols;
  CellWindow want;
};

TEST(ZoomTest, PanMovesByWholeCellsAndStopsAtTheEdges) {
  const std::vector<PanCase> cases = {
      {{10, 8, 10, 8}, 64, 64, 3, -4, {13, 8, 6, 8}},
      {{10, 8, 10, 8}, 64, 64, -100, 100, {0, 8, 56, 8}},
      {{}, 64, 64, 5, 5, {}},  // the whole map does not pan
      {{0, 4, 0, 4}, 4, 100, 7, 50, {0, 4, 50, 4}},
  };
  for (const PanCase& c : cases) {
    const CellWindow got = panBy(c.start, c.L, c.S, c.d_rows, c.d_cols);
    EXPECT_EQ(got, c.want) << windowName(got);
  }
}

TEST(ZoomTest, WindowNamesForFiles) {
  EXPECT_EQ(windowName({}), "");
  EXPECT_EQ(windowName({100, 128, 50, 128}), "rows100-227_keys50-177");
}

// A one-layer view of seeded maps with a mask blocking (i * 7 + j) % 5 == 0.
ViewModel seededView(int64_t H, int64_t L, int64_t S) {
  auto trace = std::make_shared<AttentionTrace>();
  trace->B = 1, trace->H = H, trace->L = L, trace->S = S;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), wide(-3.0f, 3.0f);
  trace->mask.allowed = BoolTensor({1, L, S});
  for (int64_t c = 0; c < L * S; ++c) trace->mask.allowed.data[c] = ((c / S) * 7 + c % S) % 5 != 0;
  trace->probs = Tensor({1, H, L, S});
  trace->scores = Tensor({1, H, L, S});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t c = 0; c < L * S; ++c) {
      const bool ok = trace->mask.allowed.data[c] != 0;
      trace->probs.data[h * L * S + c] = ok ? unit(rng) : 0.0f;
      trace->scores.data[h * L * S + c] = ok ? wide(rng) : -kInf;
    }
  for (int64_t i = 0; i < L; ++i) trace->query_tokens.push_back("q" + std::to_string(i));
  for (int64_t j = 0; j < S; ++j) trace->key_tokens.push_back("k" + std::to_string(j));
  return viewFromTrace(trace);
}

struct WindowCase {
  int64_t L, S;
  CellWindow window;
};

TEST(ZoomTest, WindowMapsAreTheMapsCellsOrTheirBlockPools) {
  const std::vector<WindowCase> cases = {
      {40, 30, {}},                  // whole, small: every cell
      {40, 30, {5, 10, 7, 4}},       // exact window
      {600, 500, {100, 256, 3, 256}},  // exactly kTextureMaxSide: still exact
      {600, 500, {0, 300, 100, 257}},  // larger: pooled
      {600, 500, {}},                // whole, pooled
      {300, 700, {299, 1, 699, 1}},  // one cell (windowMap does not clamp)
  };
  for (const WindowCase& c : cases) {
    const ViewModel view = seededView(2, c.L, c.S);
    const CellWindow w = resolveWindow(c.window, c.L, c.S);
    for (MapKind kind : {MapKind::Probs, MapKind::Scores, MapKind::Mask}) {
      const int64_t h = 1;
      const PooledMap got = view.windowMap(kind, 0, 0, h, c.window);
      // Reference: the window's cells straight from the arrays, masked -inf, then pooled.
      std::vector<float> cells;
      const float* values = kind == MapKind::Probs ? view.probs(0, 0, h) : view.scores(0, 0, h);
      for (int64_t i = w.row0; i < w.row0 + w.rows; ++i)
        for (int64_t j = w.col0; j < w.col0 + w.cols; ++j) {
          const bool ok = view.isAllowed(0, 0, i, j);
          cells.push_back(!ok ? -kInf : kind == MapKind::Mask ? 1.0f : values[i * c.S + j]);
        }
      const int64_t out_r = std::min(w.rows, kTextureMaxSide), out_c = std::min(w.cols, kTextureMaxSide);
      FloatBuffer want(cells.begin(), cells.end());
      if (out_r < w.rows || out_c < w.cols) {
        want = (kind == MapKind::Scores ? maxAbsPool2d(cells.data(), w.rows, w.cols, out_r, out_c)
                                        : maxPool2d(cells.data(), w.rows, w.cols, out_r, out_c))
                   .data;
      }
      ASSERT_EQ(got.rows, out_r);
      ASSERT_EQ(got.cols, out_c);
      ASSERT_EQ(got.values, want) << "L=" << c.L << " S=" << c.S << " window " << windowName(c.window);
    }
    if (c.window.whole()) {
      EXPECT_EQ(view.windowMap(MapKind::Probs, 0, 0, 0, c.window).values,
                view.textureMap(MapKind::Probs, 0, 0, 0).values);
    }
  }
}

TEST(ZoomTest, WindowOutsideTheMapIsAnInputError) {
  const ViewModel view = seededView(1, 20, 20);
  EXPECT_THROW(view.windowMap(MapKind::Probs, 0, 0, 0, {15, 10, 0, 4}), InputError);
  EXPECT_THROW(view.windowMap(MapKind::Probs, 0, 0, 0, {0, 4, -1, 4}), InputError);
}

}  // namespace
}  // namespace attnscope
