// The view model against hand-made data: aliasing (no copies of a trace's maps), labels,
// ranges over allowed cells, texture maps (masked -inf, pooled when large), several
// layers, and imported maps with their distribution warning. References are plain loops
// over the hand-made arrays, in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "view/view_model.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A trace with only what the view model reads: seeded values in [-2, 2] for scores and
// [0, 1) for probs, the mask blocks (i + j + b) % 3 == 0 cells (probs 0, scores -inf).
std::shared_ptr<AttentionTrace> handMadeTrace(int64_t B, int64_t H, int64_t L, int64_t S, uint64_t seed,
                                              bool dropout = false) {
  auto trace = std::make_shared<AttentionTrace>();
  trace->B = B, trace->H = H, trace->L = L, trace->S = S;
  trace->scale = 0.25f;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), wide(-2.0f, 2.0f);
  trace->probs = Tensor({B, H, L, S});
  trace->scores = Tensor({B, H, L, S});
  trace->mask.allowed = BoolTensor({B, L, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) trace->mask.allowed.data[(b * L + i) * S + j] = (i + j + b) % 3 != 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t c = 0; c < L * S; ++c) {
        const size_t at = static_cast<size_t>((b * H + h) * L * S + c);
        const bool ok = trace->mask.allowed.data[b * L * S + c] != 0;
        trace->probs.data[at] = ok ? unit(rng) : 0.0f;
        trace->scores.data[at] = ok ? wide(rng) : -kInf;
      }
  if (dropout) {
    trace->dropout_applied = true;
    trace->probs_dropped = trace->probs;
    for (float& p : trace->probs_dropped.data) p *= 2.0f;
  }
  trace->query_tokens.clear();
  for (int64_t i = 0; i < L; ++i) trace->query_tokens.push_back("q" + std::to_string(i));
  for (int64_t j = 0; j < S; ++j) trace->key_tokens.push_back("k" + std::to_string(j));
  trace->mask.components.push_back({"causal", {}});
  return trace;
}

struct RangeRef {
  double max = 0, min_positive = INFINITY, abs_max = 0;
  int64_t count = 0;
};

RangeRef referenceRange(const Tensor& t, const BoolTensor& allowed, int64_t b, int64_t h, int64_t H, int64_t cells) {
  RangeRef r;
  for (int64_t c = 0; c < cells; ++c) {
    if (!allowed.data[b * cells + c]) continue;
    const double v = t.data[(b * H + h) * cells + c];
    ++r.count;
    r.max = std::max(r.max, v);
    r.abs_max = std::max(r.abs_max, std::fabs(v));
    if (v > 0) r.min_positive = std::min(r.min_positive, v);
  }
  return r;
}

struct TraceCase {
  int64_t B, H, L, S;
  bool dropout;
};

class ViewFromTraceTest : public ::testing::TestWithParam<TraceCase> {};

TEST_P(ViewFromTraceTest, AliasesMapsAndComputesRanges) {
  const TraceCase c = GetParam();
  const auto trace = handMadeTrace(c.B, c.H, c.L, c.S, 11 * c.L + c.S, c.dropout);
  const ViewModel view = viewFromTrace(trace);
  EXPECT_EQ(view.source, ViewSource::CoreTrace);
  EXPECT_EQ(view.trace, trace);
  EXPECT_EQ(view.layers, 1);
  EXPECT_EQ((std::vector<int64_t>{view.B, view.H, view.L, view.S}), (std::vector<int64_t>{c.B, c.H, c.L, c.S}));
  ASSERT_EQ(view.maps.size(), 1u);
  EXPECT_EQ(view.maps[0].name, "layer 0");
  EXPECT_EQ(view.maps[0].mask_name, "causal");
  EXPECT_EQ(view.maps[0].scale, 0.25f);
  EXPECT_EQ(view.maps[0].dropout_applied, c.dropout);
  const Tensor& shown = c.dropout ? trace->probs_dropped : trace->probs;
  // No copies: the view points into the trace.
  EXPECT_EQ(view.maps[0].probs.get(), shown.data.data());
  EXPECT_EQ(view.maps[0].scores.get(), trace->scores.data.data());
  EXPECT_EQ(view.maps[0].allowed.get(), trace->mask.allowed.data.data());
  const int64_t cells = c.L * c.S;
  for (int64_t b = 0; b < c.B; ++b) {
    EXPECT_EQ(view.allowed(0, b), trace->mask.allowed.data.data() + b * cells);
    EXPECT_EQ(view.query_tokens[b], trace->query_tokens);
    EXPECT_EQ(view.key_tokens[b], trace->key_tokens);
    for (int64_t h = 0; h < c.H; ++h) {
      EXPECT_EQ(view.probs(0, b, h), shown.data.data() + (b * c.H + h) * cells);
      EXPECT_EQ(view.scores(0, b, h), trace->scores.data.data() + (b * c.H + h) * cells);
      const RangeRef p = referenceRange(shown, trace->mask.allowed, b, h, c.H, cells);
      const MapRange& pr = view.probsRange(0, b, h);
      EXPECT_EQ(pr.allowed_cells, p.count);
      EXPECT_EQ(pr.max, static_cast<float>(p.max));
      EXPECT_EQ(pr.min_positive, static_cast<float>(p.min_positive));
      const RangeRef s = referenceRange(trace->scores, trace->mask.allowed, b, h, c.H, cells);
      EXPECT_EQ(view.scoresRange(0, b, h).abs_max, static_cast<float>(s.abs_max));
      // Texture values: the map, blocked cells -inf (no pooling at these sizes).
      const PooledMap probs = view.textureMap(MapKind::Probs, 0, b, h);
      const PooledMap scores = view.textureMap(MapKind::Scores, 0, b, h);
      const PooledMap mask = view.textureMap(MapKind::Mask, 0, b, h);
      ASSERT_EQ(probs.values.size(), static_cast<size_t>(cells));
      EXPECT_EQ(probs.rows, c.L);
      EXPECT_EQ(probs.cols, c.S);
      for (int64_t k = 0; k < cells; ++k) {
        const bool ok = trace->mask.allowed.data[b * cells + k] != 0;
        EXPECT_EQ(probs.values[k], ok ? shown.data[(b * c.H + h) * cells + k] : -kInf);
        EXPECT_EQ(scores.values[k], ok ? trace->scores.data[(b * c.H + h) * cells + k] : -kInf);
        EXPECT_EQ(mask.values[k], ok ? 1.0f : -kInf);
      }
    }
    double item_max = 0;
    for (int64_t h = 0; h < c.H; ++h)
      item_max = std::max(item_max, referenceRange(shown, trace->mask.allowed, b, h, c.H, cells).max);
    EXPECT_EQ(view.probsRangeOver(b).max, static_cast<float>(item_max));
  }
  EXPECT_TRUE(view.pooled_probs.empty());
  EXPECT_TRUE(view.warnings.empty());
  EXPECT_THROW(view.probs(0, c.B, 0), std::out_of_range);
  EXPECT_THROW(view.probs(1, 0, 0), std::out_of_range);
  EXPECT_THROW(view.probs(0, 0, c.H), std::out_of_range);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ViewFromTraceTest,
                         ::testing::Values(TraceCase{1, 1, 1, 1, false}, TraceCase{2, 3, 4, 5, false},
                                           TraceCase{3, 2, 7, 3, true}, TraceCase{1, 4, 9, 9, true}));

// mapRange (vectorised, any lane count) against a scalar float64 scan, over lengths that
// leave every tail size, with NaN, +-inf, -1e9 fills, zeros and masks.
TEST(ViewModelTest, MapRangeMatchesAScalarScan) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf, -1e9f, 0.0f, -0.0f};
  for (const int64_t cells : {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 4099}) {
    for (const bool masked : {false, true}) {
      std::vector<float> values(static_cast<size_t>(cells));
      std::vector<uint8_t> allowed(static_cast<size_t>(cells));
      for (int64_t c = 0; c < cells; ++c) {
        const int k = pick(rng);
        values[c] = k < 6 ? normal(rng) : specials[pick(rng) % 6];
        allowed[c] = pick(rng) < 7;
      }
      double low = INFINITY, high = -INFINITY, abs_max = 0, min_positive = INFINITY;
      int64_t count = 0;
      for (int64_t c = 0; c < cells; ++c) {
        const double v = values[c];
        if ((masked && !allowed[c]) || !std::isfinite(v)) continue;
        ++count;
        low = std::min(low, v), high = std::max(high, v), abs_max = std::max(abs_max, std::fabs(v));
        if (v > 0) min_positive = std::min(min_positive, v);
      }
      const MapRange r = mapRange(values.data(), masked ? allowed.data() : nullptr, cells);
      const std::string name = std::to_string(cells) + (masked ? " cells, masked" : " cells");
      EXPECT_EQ(r.allowed_cells, count) << name;
      EXPECT_EQ(r.min, count ? static_cast<float>(low) : 0.0f) << name;
      EXPECT_EQ(r.max, count ? static_cast<float>(high) : 0.0f) << name;
      EXPECT_EQ(r.abs_max, static_cast<float>(abs_max)) << name;
      EXPECT_EQ(r.min_positive, static_cast<float>(min_positive)) << name;
    }
  }
}

TEST(ViewModelTest, PerItemTokensAndSharedLifetime) {
  auto trace = handMadeTrace(2, 1, 2, 2, 3);
  trace->batch_query_tokens = {{"a", "b"}, {"c", "<pad>"}};
  trace->batch_key_tokens = {{"x", "y"}, {"z", "<pad>"}};
  ViewModel view = viewFromTrace(trace);
  const float* first = view.probs(0, 1, 0);
  const float expected = first[1];
  trace.reset();  // the view keeps the trace alive
  view.trace.reset();
  EXPECT_EQ(view.probs(0, 1, 0)[1], expected);
  EXPECT_EQ(view.query_tokens[1], (std::vector<std::string>{"c", "<pad>"}));
  EXPECT_EQ(view.key_tokens[0], (std::vector<std::string>{"x", "y"}));
}

TEST(ViewModelTest, LargeMapsKeepPooledCopiesWithTheirPeaks) {
  struct Case { int64_t L, S; };
  for (const Case c : {Case{257, 3}, Case{300, 300}, Case{5, 1000}, Case{513, 256}}) {
    auto trace = handMadeTrace(1, 2, c.L, c.S, 5);
    // A lone spike in an allowed cell of head 1 ((i + j) % 3 != 0), far from the origin.
    const int64_t i = c.L - 1, j = (i + c.S - 1) % 3 != 0 ? c.S - 1 : c.S - 2;
    ASSERT_TRUE(trace->mask.allowed.data[i * c.S + j]);
    trace->probs.data[(1 * c.L + i) * c.S + j] = 7.0f;
    trace->scores.data[(1 * c.L + i) * c.S + j] = -9.0f;
    const ViewModel view = viewFromTrace(trace);
    ASSERT_TRUE(view.pooled()) << c.L << "x" << c.S;
    ASSERT_EQ(view.pooled_probs.size(), 2u);
    ASSERT_EQ(view.pooled_mask.size(), 1u);
    const PooledMap probs = view.textureMap(MapKind::Probs, 0, 0, 1);
    const PooledMap scores = view.textureMap(MapKind::Scores, 0, 0, 1);
    EXPECT_EQ(probs.rows, std::min<int64_t>(c.L, kTextureMaxSide));
    EXPECT_EQ(probs.cols, std::min<int64_t>(c.S, kTextureMaxSide));
    // The spike is in the last row and column block: it wins both pools there.
    const int64_t last_row = probs.rows - 1, cols = probs.cols;
    int64_t block_col = 0;  // the block [floor(k S / cols), floor((k + 1) S / cols)) holding j
    while (static_cast<int64_t>(std::floor(static_cast<double>(block_col + 1) * c.S / cols)) <= j) ++block_col;
    EXPECT_EQ(probs.values[last_row * cols + block_col], 7.0f);
    EXPECT_EQ(scores.values[last_row * cols + block_col], -9.0f);
    EXPECT_EQ(view.probsRange(0, 0, 1).max, 7.0f);
    EXPECT_EQ(view.scoresRange(0, 0, 1).abs_max, 9.0f);
    // A pooled mask cell is 1 when any cell of its block is allowed.
    const PooledMap mask = view.textureMap(MapKind::Mask, 0, 0, 0);
    for (float v : mask.values) EXPECT_TRUE(v == 1.0f || v == -kInf);
  }
}

// The mask numbers the mask panel shows are counted when the view model is built (off the UI
// thread): allowed cells and fully masked rows per [layer, b], and each component's texture.
TEST(ViewModelTest, MaskCountsAndComponentTexturesPerBatchItem) {
  struct Case { int64_t B, L, S; };
  for (const Case c : {Case{2, 5, 7}, Case{1, 300, 260}, Case{3, 1, 4}}) {
    auto trace = handMadeTrace(c.B, 1, c.L, c.S, 11);
    // Two components: keys j < S / 2, and rows i != 0 (row 0 then has no allowed key).
    trace->mask.components.clear();
    MaskComponent left{"left", BoolTensor({c.B, c.L, c.S})}, rows{"rows", BoolTensor({c.B, c.L, c.S})};
    trace->fully_masked = BoolTensor({c.B, c.L});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.L; ++i) {
        bool any = false;
        for (int64_t j = 0; j < c.S; ++j) {
          const size_t at = static_cast<size_t>((b * c.L + i) * c.S + j);
          left.allowed.data[at] = j < c.S / 2;
          rows.allowed.data[at] = i != 0;
          trace->mask.allowed.data[at] = left.allowed.data[at] && rows.allowed.data[at];
          any = any || trace->mask.allowed.data[at];
        }
        trace->fully_masked.data[b * c.L + i] = !any;
      }
    trace->mask.components = {left, rows};
    const ViewModel view = viewFromTrace(trace);
    ASSERT_EQ(view.allowed_counts.size(), static_cast<size_t>(c.B));
    ASSERT_EQ(view.component_maps.size(), static_cast<size_t>(c.B));
    for (int64_t b = 0; b < c.B; ++b) {
      EXPECT_EQ(view.allowed_counts[b], (c.L - 1) * (c.S / 2));
      EXPECT_EQ(view.fully_masked_counts[b], c.S / 2 > 0 ? 1 : c.L);
      const std::vector<ComponentMap>& parts = view.component_maps[b];
      ASSERT_EQ(parts.size(), 2u);
      EXPECT_EQ(parts[0].name, "left");
      EXPECT_EQ(parts[0].allowed_cells, c.L * (c.S / 2));
      EXPECT_EQ(parts[1].allowed_cells, (c.L - 1) * c.S);
      // Texture: 1 allowed, -inf blocked; block max when pooled (a block with any allowed cell is 1).
      const PooledMap& map = parts[1].map;
      ASSERT_EQ(map.rows, std::min(c.L, kTextureMaxSide));
      ASSERT_EQ(map.cols, std::min(c.S, kTextureMaxSide));
      for (int64_t r = 0; r < map.rows; ++r) {
        const int64_t first_row = r * c.L / map.rows, end_row = (r + 1) * c.L / map.rows;
        const bool any_allowed = end_row - first_row > 1 || first_row != 0;
        for (int64_t k = 0; k < map.cols; ++k) EXPECT_EQ(map.values[r * map.cols + k], any_allowed ? 1.0f : -kInf);
      }
    }
  }
}

TEST(ViewModelTest, SeveralTracesBecomeLayers) {
  std::vector<std::shared_ptr<const AttentionTrace>> traces;
  for (int l = 0; l < 3; ++l) traces.push_back(handMadeTrace(2, 2, 3, 4, 100 + l));
  const ViewModel view = viewFromTraces(traces, {"enc.0", "enc.1", "enc.2"});
  EXPECT_EQ(view.source, ViewSource::ModelRun);
  EXPECT_EQ(view.layers, 3);
  EXPECT_EQ(view.trace, nullptr);
  for (int64_t l = 0; l < 3; ++l) {
    EXPECT_EQ(view.maps[l].name, "enc." + std::to_string(l));
    EXPECT_EQ(view.maps[l].trace, traces[l]);
    EXPECT_EQ(view.probs(l, 1, 1), traces[l]->probs.data.data() + 3 * 12);
  }
  EXPECT_EQ(view.probs_ranges.size(), 3u * 2 * 2);
  // The shared scale of an atlas: max over the chosen layers and every head.
  double max02 = 0;
  for (int64_t l : {0, 2})
    for (int64_t h = 0; h < 2; ++h)
      max02 = std::max(max02, referenceRange(traces[l]->probs, traces[l]->mask.allowed, 1, h, 2, 12).max);
  EXPECT_EQ(view.probsRangeOver(1, {0, 2}).max, static_cast<float>(max02));

  traces.push_back(handMadeTrace(2, 2, 3, 5, 9));
  try {
    viewFromTraces(traces);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 3 has B=2 H=2 L=3 S=5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(viewFromTraces({}), InputError);
  EXPECT_THROW(viewFromTrace(nullptr), InputError);
}

ImportedMaps importedUniform(int64_t layers, int64_t B, int64_t H, int64_t L, int64_t S) {
  ImportedMaps maps;
  maps.maps = Tensor({layers, B, H, L, S}, 1.0f / static_cast<float>(S));
  maps.origin = "bundle/attentions.npy";
  return maps;
}

TEST(ViewModelTest, ImportedMapsLabelsAndNoWarningForDistributions) {
  ImportedMaps maps = importedUniform(2, 2, 3, 2, 4);
  maps.query_tokens = {{"a", "b"}};
  maps.key_tokens = {{"w", "x", "y", "z"}, {"1", "2", "3", "4"}};
  maps.layer_names = {"first", "second"};
  maps.model = "tiny";
  const float* data = maps.maps.data.data() + 2 * 3 * 2 * 4;  // layer 1
  const ViewModel view = viewFromImported(std::move(maps));
  EXPECT_EQ(view.source, ViewSource::Imported);
  EXPECT_FALSE(view.hasScores());
  EXPECT_FALSE(view.hasMask());
  EXPECT_EQ(view.probs(1, 0, 0), data);  // moved, not copied
  EXPECT_EQ(view.query_tokens, (std::vector<std::vector<std::string>>{{"a", "b"}, {"a", "b"}}));
  EXPECT_EQ(view.key_tokens[1], (std::vector<std::string>{"1", "2", "3", "4"}));
  EXPECT_EQ(view.maps[1].name, "second");
  EXPECT_EQ(view.model, "tiny");
  EXPECT_TRUE(view.warnings.empty());
  EXPECT_EQ(view.probsRange(1, 1, 2).max, 0.25f);
  EXPECT_EQ(view.probsRange(1, 1, 2).allowed_cells, 8);
  EXPECT_TRUE(view.isAllowed(0, 0, 1, 3));
  const PooledMap mask = view.textureMap(MapKind::Mask, 0, 0, 0);
  EXPECT_EQ(mask.values, std::vector<float>(8, 1.0f));
}

TEST(ViewModelTest, ImportedPaddingMasksEveryLayerAndPiecesFollowTheLabels) {
  // B = 2, L = 2, S = 3: item 1's last key and last query are padding.
  ImportedMaps maps = importedUniform(2, 2, 1, 2, 3);
  maps.allowed = {1, 1, 1, 1, 1, 1,   // item 0 [L, S]
                  1, 1, 0, 0, 0, 0};  // item 1
  maps.query_tokens = {{"a", "b"}, {"c", "d"}};
  maps.key_tokens = {{"k", "l", "m"}};
  maps.query_pieces = {{{"\u0120a", 7}, {"b", 8}}, {{"c", 9}, {"<pad>", 0}}};
  maps.key_pieces = {{{"k", 1}, {"l", 2}, {"m", -1}}};
  const ViewModel view = viewFromImported(std::move(maps));
  ASSERT_TRUE(view.hasMask());
  EXPECT_EQ(view.maps[1].mask_name, "padding");
  EXPECT_EQ(view.allowed(0, 1), view.allowed(1, 1));  // one mask shared by every layer
  EXPECT_FALSE(view.isAllowed(1, 1, 0, 2));
  EXPECT_TRUE(view.isAllowed(1, 0, 1, 2));
  EXPECT_EQ(view.allowed_counts, (std::vector<int64_t>{6, 2, 6, 2}));      // [layers, B]
  EXPECT_EQ(view.fully_masked_counts, (std::vector<int64_t>{0, 1, 0, 1}));  // the padded query row
  EXPECT_EQ(view.probsRange(0, 1, 0).allowed_cells, 2);
  EXPECT_EQ(view.textureMap(MapKind::Probs, 0, 1, 0).values[2], -INFINITY);
  EXPECT_EQ(view.query_pieces[0][0].raw, "\u0120a");
  EXPECT_EQ(view.query_pieces[1][1].id, 0);
  ASSERT_EQ(view.key_pieces.size(), 2u);  // one row for every item
  EXPECT_EQ(view.key_pieces[1][2].id, -1);

  ImportedMaps wrong_mask = importedUniform(1, 2, 1, 2, 3);
  wrong_mask.allowed = {1, 1, 1};
  EXPECT_THROW(viewFromImported(std::move(wrong_mask)), InputError);
  ImportedMaps wrong_pieces = importedUniform(1, 1, 1, 2, 2);
  wrong_pieces.query_pieces = {{{"a", 1}}};
  EXPECT_THROW(viewFromImported(std::move(wrong_pieces)), InputError);
  ImportedMaps self = importedUniform(1, 1, 1, 2, 2);  // S == L: keys share the query pieces
  self.query_pieces = {{{"a", 1}, {"b", 2}}};
  EXPECT_EQ(viewFromImported(std::move(self)).key_pieces[0][1].raw, "b");
}

TEST(ViewModelTest, ImportedRowsThatAreNotDistributionsWarnOnce) {
  struct Case {
    const char* name;
    int64_t layer, b, h, row;
    float first, second;  // row values [first, second]
    bool warns;
  };
  const Case cases[] = {
      {"ok", 0, 0, 0, 0, 0.25f, 0.75f, false},
      {"within 1e-3", 1, 1, 0, 1, 0.2f, 0.8009f, false},
      {"sum 1.1", 1, 0, 1, 1, 0.5f, 0.6f, true},
      {"negative", 0, 1, 1, 0, -0.25f, 1.25f, true},
      {"sum 0.99", 1, 1, 1, 1, 0.49f, 0.5f, true},
  };
  for (const Case& c : cases) {
    ImportedMaps maps = importedUniform(2, 2, 2, 2, 2);
    float* row = maps.maps.data.data() + (((c.layer * 2 + c.b) * 2 + c.h) * 2 + c.row) * 2;
    row[0] = c.first, row[1] = c.second;
    const ViewModel view = viewFromImported(std::move(maps));
    ASSERT_EQ(view.warnings.size(), c.warns ? 1u : 0u) << c.name;
    if (!c.warns) continue;
    const std::string& w = view.warnings[0];
    EXPECT_NE(w.find("bundle/attentions.npy: 1 of 16 rows are not probability distributions"), std::string::npos) << w;
    const std::string index = "[" + std::to_string(c.layer) + ", " + std::to_string(c.b) + ", " +
                              std::to_string(c.h) + ", " + std::to_string(c.row) + "]";
    EXPECT_NE(w.find(index), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos);
  }
}

TEST(ViewModelTest, ImportedLabelAndShapeMismatchesAreInputErrors) {
  ImportedMaps wrong_count = importedUniform(1, 1, 1, 3, 3);
  wrong_count.query_tokens = {{"a", "b"}};
  EXPECT_THROW(viewFromImported(std::move(wrong_count)), InputError);
  ImportedMaps wrong_rows = importedUniform(1, 2, 1, 1, 1);
  wrong_rows.query_tokens = {{"a"}, {"b"}, {"c"}};
  EXPECT_THROW(viewFromImported(std::move(wrong_rows)), InputError);
  ImportedMaps rank4 = importedUniform(2, 1, 1, 2, 2);
  rank4.maps.shape = {2, 1, 2, 2};
  EXPECT_THROW(viewFromImported(std::move(rank4)), InputError);
  ImportedMaps names = importedUniform(2, 1, 1, 2, 2);
  names.layer_names = {"only one"};
  EXPECT_THROW(viewFromImported(std::move(names)), InputError);
  ImportedMaps cross = importedUniform(1, 1, 1, 2, 3);  // S != L, no key tokens: indices
  const ViewModel view = viewFromImported(std::move(cross));
  EXPECT_EQ(view.key_tokens[0], (std::vector<std::string>{"0", "1", "2"}));
}

}  // namespace
}  // namespace attnscope
