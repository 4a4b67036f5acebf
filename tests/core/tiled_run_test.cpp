// The app's tiled run (Run::tiled, buildTiledView) against its full run (buildView) on sizes
// where both fit: for every mask kind and both fills, the tiled view's overview equals the
// full view's pooled textures (the same block rule) within 1e-6, and exact windows of the
// tiled source equal the full maps' cells. Also: when configureRun chooses tiles
// (ATTNSCOPE_FULL_PATH_BYTES, sizes past 2 GiB, never for a mistake or dropout), what
// the tiled view model says about the real map, and cancelling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ostream>
#include <string>

#include "attention/tiles.h"
#include "config/run.h"

namespace attnscope {
namespace {

// Sets ATTNSCOPE_FULL_PATH_BYTES while it lives.
class FullPathBudget {
 public:
  explicit FullPathBudget(const char* bytes) { setenv("ATTNSCOPE_FULL_PATH_BYTES", bytes, 1); }
  ~FullPathBudget() { unsetenv("ATTNSCOPE_FULL_PATH_BYTES"); }
};

struct TiledRunCase {
  const char* name;
  int64_t B, L, S;
  bool cross;
  const char* mask;
  MaskFill fill;
  std::vector<int64_t> valid_lens = {};
};
std::ostream& operator<<(std::ostream& os, const TiledRunCase& c) { return os << c.name; }

const MaskFill kInf = MaskFill::NegInf;
const MaskFill k1e9 = MaskFill::NegBillion;

//                 name                  B    L    S  cross  mask                     fill
const TiledRunCase kCases[] = {
    {"none_inf",                         1, 300, 300, false, "none",                  kInf},
    {"none_1e9",                         2, 40, 270, true,  "none",                   k1e9},
    {"causal_inf",                       1, 300, 300, false, "causal",                kInf},
    {"causal_1e9",                       1, 300, 300, false, "causal",                k1e9},
    {"causal_br_inf",                    1, 100, 290, true,  "causal-br",             kInf},
    {"causal_br_1e9",                    1, 290, 100, true,  "causal-br",             k1e9},
    {"window_inf",                       1, 260, 260, false, "window:9",              kInf},
    {"window_1e9",                       1, 260, 260, false, "window:9",              k1e9},
    {"causal_window_sinks_inf",          1, 280, 280, false, "causal-window:20+sinks:4", kInf},
    {"causal_window_1e9",                1, 280, 280, false, "causal-window:20",      k1e9},
    {"prefix_inf",                       1, 270, 270, false, "prefix:30",             kInf},
    {"prefix_1e9",                       1, 270, 270, false, "prefix:30",             k1e9},
    {"segments_inf",                     1, 300, 300, false, "segments:100,120,80",   kInf},
    {"segments_1e9",                     1, 300, 300, false, "segments:100,120,80",   k1e9},
    {"padding_inf",                      2, 260, 300, true,  "padding",               kInf, {300, 0}},
    {"causal_padding_1e9",               2, 300, 300, false, "causal+padding",        k1e9, {300, 123}},
};

Settings settingsFor(const TiledRunCase& c) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.batch = c.B, s.synthetic_L = c.L, s.synthetic_S = c.S, s.cross_attention = c.cross;
  s.heads = 2, s.head_dim = 8;
  s.mask = MaskSpec::parse(c.mask);
  s.fill = c.fill;
  s.valid_lens = c.valid_lens;
  return s;
}

void expectClose(float got, float want, const std::string& where) {
  if (std::isinf(want) || want == -1e9f) {
    ASSERT_EQ(got, want) << where;
  } else {
    ASSERT_NEAR(got, want, 1e-6 * std::max(1.0f, std::fabs(want))) << where;
  }
}

class TiledRunTest : public ::testing::TestWithParam<TiledRunCase> {};

TEST_P(TiledRunTest, TiledViewEqualsFullView) {
  const TiledRunCase& c = GetParam();
  const Settings settings = settingsFor(c);
  const std::shared_ptr<const ViewModel> full = buildView(settings);
  ASSERT_FALSE(configureRun(settings).tiled);  // a few hundred cells: full path by default
  std::shared_ptr<const ViewModel> tiled;
  {
    const FullPathBudget budget("1");
    attnscope::Run run = configureRun(settings);
    ASSERT_TRUE(run.tiled);
    tiled = buildTiledView(run);
  }
  ASSERT_TRUE(tiled && tiled->tiled);
  EXPECT_EQ(tiled->source, ViewSource::Tiled);
  EXPECT_EQ(tiled->mapL(), c.L);
  EXPECT_EQ(tiled->mapS(), c.S);
  EXPECT_EQ(tiled->L, std::min(c.L, kTextureMaxSide));
  EXPECT_EQ(tiled->S, std::min(c.S, kTextureMaxSide));
  EXPECT_EQ(tiled->tiled->query_tokens[0], full->query_tokens[0]);
  EXPECT_EQ(tiled->tiled->key_tokens[0], full->key_tokens[0]);
  EXPECT_EQ(tiled->fully_masked_counts, full->fully_masked_counts);
  for (int64_t b = 0; b < c.B; ++b) {
    // The mask texture: a block is allowed when one of its cells is.
    EXPECT_EQ(tiled->textureMap(MapKind::Mask, 0, b, 0).values, full->textureMap(MapKind::Mask, 0, b, 0).values);
    for (int64_t h = 0; h < 2; ++h) {
      for (MapKind kind : {MapKind::Probs, MapKind::Scores}) {
        const PooledMap got = tiled->textureMap(kind, 0, b, h), want = full->textureMap(kind, 0, b, h);
        ASSERT_EQ(got.rows, want.rows);
        ASSERT_EQ(got.cols, want.cols);
        for (size_t n = 0; n < want.values.size(); ++n)
          expectClose(got.values[n], want.values[n], "map " + std::to_string(b) + "," + std::to_string(h) + " cell " +
                                                         std::to_string(n));
      }
      EXPECT_NEAR(tiled->probsRange(0, b, h).max, full->probsRange(0, b, h).max, 1e-6);
      // An exact window of the tiled source equals the full maps there.
      const int64_t i0 = c.L / 3, j0 = c.S / 4, rows = std::min<int64_t>(40, c.L - i0), cols = std::min<int64_t>(50, c.S - j0);
      const Tile tile = computeTile(tiled->tiled->layer(0), b, h, i0, rows, j0, cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) {
          const size_t cell = static_cast<size_t>((i0 + r) * c.S + j0 + k);
          ASSERT_NEAR(tile.probs.data[r * cols + k], full->probs(0, b, h)[cell], 1e-6);
          expectClose(tile.scores.data[r * cols + k], full->scores(0, b, h)[cell], "tile cell");
          ASSERT_EQ(tile.allowed.data[r * cols + k] != 0, full->isAllowed(0, b, i0 + r, j0 + k));
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TiledRunTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<TiledRunCase>& info) { return std::string(info.param.name); });

TEST(TiledRun, ConfigureRunChoosesTilesPastTheBudget) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.synthetic_L = s.synthetic_S = 8192;  // [16, 8192, 8192] maps: far past 2 GiB
  s.heads = 16, s.head_dim = 64;
  s.mask = MaskSpec::parse("causal");
  EXPECT_TRUE(configureRun(s).tiled);
  s.synthetic_L = s.synthetic_S = 64;
  EXPECT_FALSE(configureRun(s).tiled);
  const FullPathBudget budget("1");
  EXPECT_TRUE(configureRun(s).tiled);
  s.mistake = Mistake::FloorDivisionScale;  // mistakes and dropout need the full map
  EXPECT_FALSE(configureRun(s).tiled);
  s.mistake = Mistake::None;
  s.dropout = 0.2f, s.train = true;
  EXPECT_FALSE(configureRun(s).tiled);
  s.train = false;  // dropout only applies in train mode
  EXPECT_TRUE(configureRun(s).tiled);
}

TEST(TiledRun, BudgetFromTheEnvironment) {
  EXPECT_EQ(fullPathBudgetBytes(), uint64_t{2} << 30);
  {
    const FullPathBudget budget("12345");
    EXPECT_EQ(fullPathBudgetBytes(), 12345u);
  }
  const FullPathBudget bad("lots");
  EXPECT_EQ(fullPathBudgetBytes(), uint64_t{2} << 30);
}

TEST(TiledRun, OverviewCellsAndBlocksAgree) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.synthetic_L = 1000, s.synthetic_S = 300, s.cross_attention = true;
  s.heads = 1, s.head_dim = 4;
  const FullPathBudget budget("1");
  attnscope::Run run = configureRun(s);
  const std::shared_ptr<const ViewModel> view = buildTiledView(run);
  const TiledMaps& m = *view->tiled;
  EXPECT_TRUE(run.inputs.query.empty());  // released once projected
  EXPECT_EQ(view->query_tokens[0][0], "0-2");  // overview rows are labelled with their real rows
  EXPECT_EQ(view->query_tokens[0][255], "996-999");
  for (int64_t i = 0; i < m.L; ++i) {
    const int64_t r = m.overviewRow(i);
    ASSERT_TRUE(m.firstRow(r) <= i && i < m.firstRow(r + 1)) << i;
  }
  for (int64_t j = 0; j < m.S; ++j) {
    const int64_t c = m.overviewCol(j);
    ASSERT_TRUE(m.firstCol(c) <= j && j < m.firstCol(c + 1)) << j;
  }
}

TEST(TiledRun, CancelledOverviewGivesNoView) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.synthetic_L = s.synthetic_S = 400;
  const FullPathBudget budget("1");
  attnscope::Run run = configureRun(s);
  int calls = 0;
  EXPECT_EQ(buildTiledView(run, [&](double) { return ++calls < 3; }), nullptr);
  EXPECT_GE(calls, 3);
}

}  // namespace
}  // namespace attnscope
