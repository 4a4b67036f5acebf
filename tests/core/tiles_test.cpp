// Tiled long maps against the full trace (test-backend-ops style table): for every mask
// kind and both fills, the tiled overview equals maxPool2d / maxAbsPool2d of the full
// trace's maps (scores: over the allowed cells, as the app's textures pool them) and exact
// tiles equal the full maps' cells, all within 1e-6; masked scores equal the fill exactly. Variants (GQA, RoPE, ALiBi, soft-capping, sinks) too. Also: the workspace (buffer reuse, incremental projections) and
// the trace without raw scores give the same numbers as a fresh runAttention.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <utility>

#include "attention/attention.h"
#include "attention/tiles.h"
#include "reference.h"
#include "tensor/memory.h"
#include "view/downsample.h"

namespace attnscope {
namespace {

struct TileCase {
  const char* name;
  int64_t B, L, S, D, H;
  bool self;
  const char* mask;
  MaskFill fill;
  int64_t rows, cols;  // overview grid
  std::vector<int64_t> valid_lens = {};
  bool key_padding = false;
  bool attn_mask = false;
  int64_t G = 0;  // > 0: K/V heads (w_k, w_v cut to [G*d, D])
  bool rope = false;
  bool alibi = false;
  float softcap = 0.0f;
};

std::ostream& operator<<(std::ostream& os, const TileCase& c) { return os << c.name; }

const MaskFill kInf = MaskFill::NegInf;
const MaskFill k1e9 = MaskFill::NegBillion;

//              name                    B   L   S   D  H  self  mask                     fill  rows cols
const TileCase kTileCases[] = {
    {"none_inf",                        1, 40, 40, 16, 2, true, "none",                  kInf, 8, 8},
    {"none_1e9",                        2, 37, 29, 24, 3, false, "none",                 k1e9, 7, 5},
    {"causal_inf",                      1, 130, 130, 32, 4, true, "causal",              kInf, 33, 17},
    {"causal_1e9",                      1, 130, 130, 32, 4, true, "causal",              k1e9, 130, 130},
    {"causal_br_inf",                   2, 20, 50, 16, 2, false, "causal-br",            kInf, 20, 9},
    {"causal_br_L_gt_S_1e9",            1, 50, 20, 16, 2, false, "causal-br",            k1e9, 11, 20},
    {"window_inf",                      1, 70, 70, 16, 4, true, "window:5",              kInf, 16, 16},
    {"window_1e9",                      1, 70, 70, 16, 4, true, "window:5",              k1e9, 9, 31},
    {"causal_window_inf",               2, 66, 66, 12, 3, true, "causal-window:7",       kInf, 13, 13},
    {"causal_window_1e9",               2, 66, 66, 12, 3, true, "causal-window:7",       k1e9, 66, 3},
    {"prefix_inf",                      1, 45, 45, 16, 2, true, "prefix:6",              kInf, 10, 10},
    {"prefix_1e9",                      1, 45, 45, 16, 2, true, "prefix:6",              k1e9, 1, 1},
    {"segments_inf",                    1, 80, 80, 16, 2, true, "segments:20,30",        kInf, 20, 20},
    {"segments_1e9",                    1, 80, 80, 16, 2, true, "segments:20,30",        k1e9, 7, 80},
    {"padding_inf",                     3, 30, 40, 16, 2, false, "padding",              kInf, 6, 8, {40, 17, 0}},
    {"padding_1e9",                     3, 30, 40, 16, 2, false, "padding",              k1e9, 6, 8, {40, 17, 0}},
    {"key_padding_inf",                 2, 25, 33, 8, 2, false, "none",                  kInf, 5, 11, {}, true},
    {"attn_mask_1e9",                   2, 25, 33, 8, 2, false, "none",                  k1e9, 5, 11, {}, false, true},
    {"causal_padding_window_inf",       2, 90, 90, 16, 4, true, "causal+padding+window:20", kInf, 30, 30, {90, 41}},
    {"causal_padding_window_1e9",       2, 90, 90, 16, 4, true, "causal+padding+window:20", k1e9, 30, 30, {90, 41}},
    {"gqa_rope_alibi_softcap_sinks",    1, 70, 70, 16, 4, true, "causal-window:9+sinks:2", kInf, 14, 14, {}, false, false, 2, true, true, 3.0f},
    {"gqa_cross_rope_softcap_sinks_1e9", 2, 30, 45, 24, 6, false, "window:4+sinks:3",     k1e9, 6, 9, {}, false, false, 3, true, false, 2.0f},
    {"mqa_alibi_padding",               2, 40, 40, 16, 4, true, "causal+padding",        kInf, 8, 8, {40, 13}, false, false, 1, false, true},
};

AttentionInputs makeInputs(const TileCase& c) {
  std::mt19937 rng(1234);
  return testing::maskedCaseInputs(c, rng, 3.0);
}

AttentionOptions makeOptions(const TileCase& c) { return testing::maskedCaseOptions(c); }

class TileCaseTest : public ::testing::TestWithParam<TileCase> {};

// maxAbsPool2d of scores [rows, cols] with the masked cells (allowed 0) as -inf; a block with
// no allowed cell is the fill: what the overview holds.
Tensor maxAbsPoolAllowed(std::vector<float> scores, const std::vector<float>& allowed, int64_t rows, int64_t cols,
                         int64_t out_rows, int64_t out_cols, MaskFill fill) {
  for (size_t n = 0; n < scores.size(); ++n)
    if (allowed[n] == 0.0f) scores[n] = -INFINITY;
  Tensor pooled = maxAbsPool2d(scores.data(), rows, cols, out_rows, out_cols);
  for (float& v : pooled.data)
    if (v == -INFINITY) v = fill == MaskFill::NegInf ? -INFINITY : -1e9f;
  return pooled;
}

// [L, S] of batch item b's mask as 1 / 0.
std::vector<float> allowedAsFloat(const AttentionTrace& full, int64_t b) {
  const size_t cells = static_cast<size_t>(full.L * full.S);
  return std::vector<float>(full.mask.allowed.data.begin() + b * cells, full.mask.allowed.data.begin() + (b + 1) * cells);
}

// Map bh = b * H + h of the full scores pooled as the overview pools them.
Tensor pooledAllowedScores(const AttentionTrace& full, int64_t bh, int64_t rows, int64_t cols) {
  const size_t cells = static_cast<size_t>(full.L * full.S);
  const std::vector<float> scores(full.scores.data.begin() + bh * cells, full.scores.data.begin() + (bh + 1) * cells);
  return maxAbsPoolAllowed(scores, allowedAsFloat(full, bh / full.H), full.L, full.S, rows, cols, full.fill);
}

TEST_P(TileCaseTest, OverviewEqualsPooledFullMaps) {
  const TileCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  const AttentionOptions options = makeOptions(c);
  const AttentionTrace full = runAttention(in, options);
  const TiledAttention tiled = prepareTiled(in, options);
  ASSERT_EQ(tiled.mask_names.size(), full.mask.components.size());
  int progress_calls = 0;
  const std::optional<Overview> overview = computeOverview(tiled, c.rows, c.cols, [&](double fraction) {
    EXPECT_GT(fraction, 0.0);
    EXPECT_LE(fraction, 1.0);
    ++progress_calls;
    return true;
  });
  ASSERT_TRUE(overview.has_value());
  EXPECT_GT(progress_calls, 0);
  ASSERT_EQ(overview->probs.shape, (Shape{c.B, c.H, c.rows, c.cols}));
  EXPECT_EQ(overview->fully_masked.data, full.fully_masked.data);
  const size_t map = static_cast<size_t>(c.L) * c.S, pooled = static_cast<size_t>(c.rows) * c.cols;
  for (int64_t bh = 0; bh < c.B * c.H; ++bh) {
    const Tensor probs = maxPool2d(&full.probs.data[bh * map], c.L, c.S, c.rows, c.cols);
    const Tensor scores = pooledAllowedScores(full, bh, c.rows, c.cols);
    for (size_t n = 0; n < pooled; ++n) {
      ASSERT_NEAR(overview->probs.data[bh * pooled + n], probs.data[n], 1e-6) << "map " << bh << " cell " << n;
      const float want = scores.data[n], got = overview->scores.data[bh * pooled + n];
      if (std::isinf(want) || want == -1e9f) {
        ASSERT_EQ(got, want) << "masked block " << n;
      } else {
        ASSERT_NEAR(got, want, 1e-6 * std::max(1.0f, std::fabs(want))) << "map " << bh << " cell " << n;
      }
    }
  }
}

// [rows, cols] window of one [L, S] map, row-major.
std::vector<float> cropMap(const float* map, int64_t S, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) out.insert(out.end(), map + (i0 + r) * S + j0, map + (i0 + r) * S + j0 + cols);
  return out;
}

// A pooled window of one map equals the pooled window of the full map (what the app's zoomed
// focus view shows of a tiled source); the overview's pooled mask equals the pooled full mask.
TEST_P(TileCaseTest, WindowEqualsPooledFullWindow) {
  const TileCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  const AttentionOptions options = makeOptions(c);
  const AttentionTrace full = runAttention(in, options);
  const TiledAttention tiled = prepareTiled(in, options);
  const std::optional<Overview> overview = computeOverview(tiled, c.rows, c.cols);
  ASSERT_TRUE(overview.has_value());
  for (int64_t b = 0; b < c.B; ++b) {
    std::vector<float> mask(static_cast<size_t>(c.L * c.S));
    for (size_t n = 0; n < mask.size(); ++n) mask[n] = full.mask.allowed.data[b * c.L * c.S + n] ? 1.0f : -INFINITY;
    const Tensor pooled = maxPool2d(mask.data(), c.L, c.S, c.rows, c.cols);
    for (int64_t n = 0; n < c.rows * c.cols; ++n)
      ASSERT_EQ(overview->allowed.data[b * c.rows * c.cols + n] != 0, pooled.data[n] == 1.0f) << "block " << n;
  }
  //                  i0          rows              j0          cols              out_rows out_cols
  const int64_t windows[][6] = {{0, c.L, 0, c.S, std::max<int64_t>(1, c.L / 3), std::max<int64_t>(1, c.S / 2)},
                                {c.L / 4, c.L / 2, c.S / 3, c.S - c.S / 3, std::max<int64_t>(1, c.L / 5), 3},
                                {c.L / 2, c.L - c.L / 2, 1, c.S / 2, 2, std::max<int64_t>(1, c.S / 4)},
                                {1, 5, c.S - 7, 7, 5, 7}};
  const size_t map = static_cast<size_t>(c.L) * c.S;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (const auto& w : windows) {
        const std::optional<Overview> got = computeWindow(tiled, b, h, w[0], w[1], w[2], w[3], w[4], w[5]);
        ASSERT_TRUE(got.has_value());
        ASSERT_EQ(got->probs.shape, (Shape{1, 1, w[4], w[5]}));
        const size_t first = static_cast<size_t>(b * c.H + h) * map;
        const std::vector<float> probs = cropMap(&full.probs.data[first], c.S, w[0], w[1], w[2], w[3]);
        const std::vector<float> scores = cropMap(&full.scores.data[first], c.S, w[0], w[1], w[2], w[3]);
        const Tensor want_probs = maxPool2d(probs.data(), w[1], w[3], w[4], w[5]);
        const std::vector<float> allowed = cropMap(allowedAsFloat(full, b).data(), c.S, w[0], w[1], w[2], w[3]);
        const Tensor want_scores = maxAbsPoolAllowed(scores, allowed, w[1], w[3], w[4], w[5], full.fill);
        for (int64_t n = 0; n < w[4] * w[5]; ++n) {
          ASSERT_NEAR(got->probs.data[n], want_probs.data[n], 1e-6) << "map " << b << "," << h << " cell " << n;
          const float want = want_scores.data[n], value = got->scores.data[n];
          if (std::isinf(want) || want == -1e9f) {
            ASSERT_EQ(value, want) << "masked block " << n;
          } else {
            ASSERT_NEAR(value, want, 1e-6 * std::max(1.0f, std::fabs(want))) << "map " << b << "," << h << " cell " << n;
          }
        }
        for (int64_t r = 0; r < w[1]; ++r)
          ASSERT_EQ(got->fully_masked.data[r], full.fully_masked.data[b * c.L + w[0] + r]);
      }
  EXPECT_THROW(computeWindow(tiled, 0, 0, 0, c.L, 0, c.S, c.L + 1, 1), InputError);
  EXPECT_THROW(computeWindow(tiled, 0, c.H, 0, 1, 0, 1, 1, 1), InputError);
  EXPECT_THROW(computeWindow(tiled, 0, 0, c.L - 1, 2, 0, 1, 1, 1), InputError);
}

TEST_P(TileCaseTest, ExactTilesEqualFullMaps) {
  const TileCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  const AttentionOptions options = makeOptions(c);
  const AttentionTrace full = runAttention(in, options);
  const TiledAttention tiled = prepareTiled(in, options);
  // A corner tile, an interior one and the whole map.
  const int64_t windows[][4] = {{0, 1, 0, 1}, {c.L / 3, c.L / 2, c.S / 4, c.S / 2}, {0, c.L, 0, c.S}};
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (const auto& w : windows) {
        const Tile tile = computeTile(tiled, b, h, w[0], w[1], w[2], w[3]);
        for (int64_t r = 0; r < w[1]; ++r)
          for (int64_t col = 0; col < w[3]; ++col) {
            const size_t cell = ((b * c.H + h) * c.L + w[0] + r) * c.S + w[2] + col;
            const float want = full.scores.data[cell], got = tile.scores.data[r * w[3] + col];
            if (std::isinf(want) || want == -1e9f) {
              ASSERT_EQ(got, want);
            } else {
              ASSERT_NEAR(got, want, 1e-6 * std::max(1.0f, std::fabs(want))) << "score " << cell;
            }
            ASSERT_NEAR(tile.probs.data[r * w[3] + col], full.probs.data[cell], 1e-6) << "prob " << cell;
            ASSERT_EQ(tile.allowed.data[r * w[3] + col], full.mask.allowed.data[(b * c.L + w[0] + r) * c.S + w[2] + col]);
            if (full.probs.data[cell] == 0.0f) {
              ASSERT_EQ(tile.probs.data[r * w[3] + col], 0.0f);
            }
          }
      }
}

TEST_P(TileCaseTest, WorkspaceWithoutRawScoresMatchesRunAttention) {
  const TileCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  AttentionOptions options = makeOptions(c);
  const AttentionTrace fresh = runAttention(in, options);
  options.keep_raw_scores = false;
  AttentionWorkspace workspace;
  const AttentionTrace* first = nullptr;
  for (int run = 0; run < 3; ++run) {  // fresh buffers, then reused ones (projections too)
    const std::shared_ptr<const AttentionTrace> t = workspace.run(in, options);
    EXPECT_EQ(workspace.projectionsReused(), run > 0);
    if (run == 0) first = t.get();
    if (run > 0) {
      EXPECT_EQ(t.get(), first) << "a trace nobody holds is reused";
    }
    EXPECT_TRUE(t->raw_scores.empty());
    EXPECT_EQ(t->q_proj.data, fresh.q_proj.data);
    for (size_t n = 0; n < fresh.probs.data.size(); ++n) {
      const float want = fresh.scores.data[n];
      if (std::isinf(want) || want == -1e9f) {
        ASSERT_EQ(t->scores.data[n], want);
      } else {
        ASSERT_NEAR(t->scores.data[n], want, 1e-6 * std::max(1.0f, std::fabs(want)));
      }
      ASSERT_NEAR(t->probs.data[n], fresh.probs.data[n], 1e-6);
    }
    for (size_t n = 0; n < fresh.output.data.size(); ++n) {
      ASSERT_NEAR(t->output.data[n], fresh.output.data[n], 1e-5 * std::max(1.0f, std::fabs(fresh.output.data[n])));
    }
    // rawScore derives q.k from q and k at any cell, masked or not.
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.L; i += 7)
        for (int64_t j = 0; j < c.S; j += 5) {
          const float want = fresh.raw_scores.data[((b * c.H + c.H - 1) * c.L + i) * c.S + j];
          ASSERT_NEAR(rawScore(*t, b, c.H - 1, i, j), want, 1e-5 * std::max(1.0f, std::fabs(want)));
        }
  }
}

// Incremental recomputes: the workspace reruns on the previous run's projections when only
// the mask, fill or scale (a temperature is a custom 1 / (T sqrt(d))) changed. Each step
// must give runAttention's numbers for the same options bit for bit, not within a tolerance.
TEST_P(TileCaseTest, IncrementalStepsEqualFromScratchRunsExactly) {
  const TileCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  AttentionOptions o = makeOptions(c);
  o.mask = MaskSpec::parse("none");  // before: no mask, -inf fill, 1 / sqrt(d)
  o.fill = MaskFill::NegInf;
  o.keep_raw_scores = false;  // as the app runs
  AttentionWorkspace workspace;
  std::shared_ptr<const AttentionTrace> held = workspace.run(in, o);  // as the screen holds it
  const float temperature_scale = static_cast<float>(1.0 / (0.6 * std::sqrt(static_cast<double>(c.D / c.H))));
  const std::vector<std::pair<std::string, std::function<void(AttentionOptions&)>>> steps = {
      {"the mask", [&](AttentionOptions& x) { x.mask = MaskSpec::parse(c.mask); }},
      {"the other fill", [&](AttentionOptions& x) { x.fill = c.fill == kInf ? k1e9 : kInf; }},
      {"temperature 0.6", [&](AttentionOptions& x) { x.scale_mode = ScaleMode::Custom, x.custom_scale = temperature_scale; }},
      {"no scaling", [](AttentionOptions& x) { x.scale_mode = ScaleMode::None; }},
      {"the case's fill", [&](AttentionOptions& x) { x.fill = c.fill; }},
  };
  for (const auto& [what, change] : steps) {
    change(o);
    const std::shared_ptr<const AttentionTrace> next = workspace.run(in, o);
    EXPECT_TRUE(workspace.projectionsReused()) << what;
    EXPECT_NE(next.get(), held.get()) << what << ": the held trace must not be overwritten";
    const AttentionTrace fresh = runAttention(in, o);
    EXPECT_EQ(next->mask.allowed.data, fresh.mask.allowed.data) << what;
    EXPECT_EQ(next->fully_masked.data, fresh.fully_masked.data) << what;
    EXPECT_EQ(next->scale, fresh.scale) << what;
    EXPECT_EQ(next->q.data, fresh.q.data) << what;
    EXPECT_EQ(next->k.data, fresh.k.data) << what;
    EXPECT_EQ(next->scores.data, fresh.scores.data) << what;  // masked: the fill, -inf == -inf
    EXPECT_EQ(next->probs.data, fresh.probs.data) << what;
    EXPECT_EQ(next->context.data, fresh.context.data) << what;
    EXPECT_EQ(next->output.data, fresh.output.data) << what;
    held = next;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TileCaseTest, ::testing::ValuesIn(kTileCases),
                         [](const ::testing::TestParamInfo<TileCase>& info) { return std::string(info.param.name); });

TEST(Workspace, HeldTraceIsNotOverwrittenAndMaskChangeReusesProjections) {
  const TileCase c = kTileCases[2];
  const AttentionInputs in = makeInputs(c);
  AttentionOptions options = makeOptions(c);
  AttentionWorkspace workspace;
  const std::shared_ptr<const AttentionTrace> held = workspace.run(in, options);
  const FloatBuffer held_probs = held->probs.data;
  options.mask = MaskSpec::parse("window:3");
  options.fill = MaskFill::NegBillion;
  const std::shared_ptr<const AttentionTrace> next = workspace.run(in, options);
  EXPECT_TRUE(workspace.projectionsReused());
  EXPECT_NE(next.get(), held.get());
  EXPECT_EQ(held->probs.data, held_probs) << "the trace on screen must stay intact";
  const AttentionTrace fresh = runAttention(in, options);
  for (size_t n = 0; n < fresh.probs.data.size(); ++n) ASSERT_NEAR(next->probs.data[n], fresh.probs.data[n], 1e-6);
  // New inputs: projections recomputed.
  AttentionInputs other = in;
  other.query.data[0] += 1.0f;
  other.key = other.value = other.query;
  workspace.run(other, options);
  EXPECT_FALSE(workspace.projectionsReused());
}

TEST(Tiles, CancelReturnsNothing) {
  const TileCase c = kTileCases[2];
  const TiledAttention tiled = prepareTiled(makeInputs(c), makeOptions(c));
  EXPECT_FALSE(computeOverview(tiled, 64, 64, [](double) { return false; }).has_value());
}

TEST(Tiles, RefusesMistakesDropoutAndBadWindows) {
  const TileCase c = kTileCases[0];
  const AttentionInputs in = makeInputs(c);
  AttentionOptions options = makeOptions(c);
  options.mistake = Mistake::NoScaling;
  EXPECT_THROW(prepareTiled(in, options), InputError);
  options = makeOptions(c);
  options.train = true;
  options.dropout = 0.1f;
  EXPECT_THROW(prepareTiled(in, options), InputError);
  const TiledAttention tiled = prepareTiled(in, makeOptions(c));
  EXPECT_THROW(computeTile(tiled, 0, 0, 30, 20, 0, 5), InputError);
  EXPECT_THROW(computeTile(tiled, 0, 2, 0, 1, 0, 1), InputError);
  EXPECT_THROW(computeOverview(tiled, 0, 5), InputError);
  EXPECT_THROW(computeOverview(tiled, 41, 5), InputError);
}

TEST(Tiles, EstimateRefusesBeyondMemory) {
  // L = S = 2^24, D = 4096: inputs alone are far beyond any machine here.
  EXPECT_GT(estimateTiledBytes(1, 1 << 24, 1 << 24, 4096, 4096, 4096, 4096, 32, 512, 512), uint64_t{1} << 40);
  EXPECT_THROW(checkMemory(estimateTiledBytes(1, 1 << 24, 1 << 24, 4096, 4096, 4096, 4096, 32, 512, 512)),
               InputError);
}

}  // namespace
}  // namespace attnscope
