// The workspace's raw score cache (issue 9, test-backend-ops style tables): a sequence of
// incremental steps (mask kinds both ways, causal -> none needing more keys, fill,
// temperature, no scaling, ALiBi, soft-cap, the score-only mistakes, dropout) must give a
// from-scratch runAttention's scores, probs, context and output bit for bit, take its raw
// scores from the cache as each step states, and drop the cache when the projections or the
// head split change (RoPE, inputs, H, no-head-split). The non-mistake steps are also checked
// against the float64 reference. A byte cap below B*H*L*S*4 refuses the cache, a run without
// it (full recompute, kept raw scores) drops it; every run stays correct.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <string>

#include "attention/attention.h"
#include "reference.h"

namespace attnscope {
namespace {

struct CacheShape {
  const char* name;
  int64_t B, L, S, D, H;
  bool self;
  int64_t G;      // > 0: K/V heads (w_k, w_v cut to [G*d, D])
  int64_t other_H;  // the H of the "heads change" step
};

std::ostream& operator<<(std::ostream& os, const CacheShape& c) { return os << c.name; }

// Every shape has S > 64 or L < S, so that causal -> none needs more keys in some block.
//                      name          B    L    S   D  H  self  G  other_H
const CacheShape kShapes[] = {
    {"self_3_blocks",   1, 130, 130, 32, 4, true, 0, 2},   // the last block has 2 rows
    {"cross_batch",     2,  70, 100, 24, 3, false, 0, 6},
    {"gqa",             1,  96,  96, 32, 4, true, 2, 8},
};

// What a step does to the raw scores.
enum class Raw {
  Fresh,     // the cache was dropped: every block computes (computed > 0, nothing cached)
  Extended,  // some blocks need keys the cache lacks: only those are computed (extended > 0)
  Cached,    // every block from the cache: no Q K^T GEMM (rawScoresReused)
};

struct Step {
  const char* name;
  std::function<void(AttentionOptions&, AttentionInputs&)> change;
  bool projections_reused;
  Raw raw;
  bool mha_only = false;   // needs G == H (the no-head-split mistake)
};

MaskSpec mask(const char* text) { return MaskSpec::parse(text); }

// Applied in order to one workspace, starting from a causal mask, -inf fill, 1 / sqrt(d).
const std::vector<Step> kSteps = {
    {"first run", [](AttentionOptions&, AttentionInputs&) {}, false, Raw::Fresh},
    {"causal -> none (more keys)", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("none"); }, true, Raw::Extended},
    {"none -> causal", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("causal"); }, true, Raw::Cached},
    {"window:5", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("window:5"); }, true, Raw::Cached},
    {"causal-window:7", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("causal-window:7"); }, true, Raw::Cached},
    {"prefix:6", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("prefix:6"); }, true, Raw::Cached},
    {"segments:20,30", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("segments:20,30"); }, true, Raw::Cached},
    {"causal-br", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("causal-br"); }, true, Raw::Cached},
    {"fill -1e9", [](AttentionOptions& o, AttentionInputs&) { o.fill = MaskFill::NegBillion; }, true, Raw::Cached},
    {"temperature 0.6",
     [](AttentionOptions& o, AttentionInputs& in) {
       o.scale_mode = ScaleMode::Custom;
       o.custom_scale = static_cast<float>(1.0 / (0.6 * std::sqrt(static_cast<double>(in.w_q.dim(0) / o.heads))));
     },
     true, Raw::Cached},
    {"no scaling", [](AttentionOptions& o, AttentionInputs&) { o.scale_mode = ScaleMode::None; }, true, Raw::Cached},
    {"ALiBi on", [](AttentionOptions& o, AttentionInputs&) { o.alibi = true; }, true, Raw::Cached},
    {"soft-cap 3", [](AttentionOptions& o, AttentionInputs&) { o.softcap = 3.0f; }, true, Raw::Cached},
    {"ALiBi, soft-cap off, fill -inf",
     [](AttentionOptions& o, AttentionInputs&) {
       o.alibi = false;
       o.softcap.reset();
       o.fill = MaskFill::NegInf;
     },
     true, Raw::Cached},
    // The mistakes that act after Q K^T: the score rule, the merge of heads, the mask.
    {"mistake floor-div-scale", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::FloorDivisionScale; }, true, Raw::Cached},
    {"mistake no-scale", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::NoScaling; }, true, Raw::Cached},
    {"mistake no-contiguous", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::ReshapeWithoutTranspose; }, true, Raw::Cached},
    {"mistake mask-not-broadcast", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::MaskNotBroadcast; }, true, Raw::Cached},
    {"dropout 0.2 (train)",
     [](AttentionOptions& o, AttentionInputs&) {
       o.mistake = Mistake::None;
       o.train = true;
       o.dropout = 0.2f;
       o.seed = 7;
     },
     true, Raw::Cached},
    {"dropout off, mask none", [](AttentionOptions& o, AttentionInputs&) { o.train = false, o.dropout = 0.0f, o.mask = mask("none"); }, true, Raw::Cached},
    // One map over the full D: the projections stay, the raw map is another one.
    {"mistake no-head-split", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::NoHeadSplit; }, true, Raw::Fresh, true},
    {"no-head-split, causal", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("causal"); }, true, Raw::Cached, true},
    {"no-head-split, none", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("none"); }, true, Raw::Cached, true},
    {"heads split again", [](AttentionOptions& o, AttentionInputs&) { o.mistake = Mistake::None; }, true, Raw::Fresh, true},
    // Projections change: the cache goes.
    {"RoPE on", [](AttentionOptions& o, AttentionInputs&) { o.rope = true, o.mask = mask("causal"); }, false, Raw::Fresh},
    {"RoPE, none", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("none"); }, true, Raw::Extended},
    {"RoPE base 500", [](AttentionOptions& o, AttentionInputs&) { o.rope_base = 500.0; }, false, Raw::Fresh},
    {"RoPE off", [](AttentionOptions& o, AttentionInputs&) { o.rope = false; }, false, Raw::Fresh},
    {"the query changes", [](AttentionOptions&, AttentionInputs& in) { in.query.data[5] += 0.25f; }, false, Raw::Fresh},
    {"w_k changes", [](AttentionOptions&, AttentionInputs& in) { in.w_k.data[3] -= 0.125f; }, false, Raw::Fresh},
    {"window:3 on the new inputs", [](AttentionOptions& o, AttentionInputs&) { o.mask = mask("window:3"); }, true, Raw::Cached},
};

class RawScoreCacheTest : public ::testing::TestWithParam<CacheShape> {};

AttentionInputs makeInputs(const CacheShape& c) {
  std::mt19937 rng(99);
  AttentionInputs in = testing::randomInputs({c.B, c.L, c.S, c.D, c.D, c.D, c.D}, rng, c.self, 0.5, 3.0);
  if (c.G > 0) testing::keepKeyValueRows(in, c.G * (c.D / c.H));
  return in;
}

// `got` is runAttention's trace for the same inputs and options, bit for bit: the cached
// Q K^T of a cell is the same float the from-scratch GEMM gives (same dot product over d;
// OpenBLAS's result for a cell does not depend on which columns a call covers).
void expectSameMaps(const AttentionTrace& got, const AttentionTrace& fresh, const std::string& what) {
  EXPECT_EQ(got.mask.allowed.data, fresh.mask.allowed.data) << what;
  EXPECT_EQ(got.scale, fresh.scale) << what;
  EXPECT_EQ(got.scores.data, fresh.scores.data) << what;  // masked: the fill, -inf == -inf
  EXPECT_EQ(got.probs.data, fresh.probs.data) << what;
  EXPECT_EQ(got.probs_dropped.data, fresh.probs_dropped.data) << what;
  EXPECT_EQ(got.context.data, fresh.context.data) << what;
  EXPECT_EQ(got.output.data, fresh.output.data) << what;
}

// Against the float64 reference (no mistake, no dropout): scores where allowed, probs, output.
// Scores within 5e-5 (relative above 1): q and k with gain 3 have
// components of several units, whose float32 products lose ~1e-5 to rounding in a dot of d.
void expectReference(const AttentionTrace& t, const AttentionInputs& in, const AttentionOptions& o,
                     const std::string& what) {
  const testing::Reference r = testing::referenceAttention(in, o);
  for (size_t n = 0; n < r.probs.size(); ++n) {
    if (std::isfinite(r.scores[n]) && r.scores[n] != -1e9) {
      ASSERT_NEAR(t.scores.data[n], r.scores[n], testing::tolerance(r.scores[n], 5e-5)) << what << " score " << n;
    } else {
      ASSERT_EQ(t.scores.data[n], static_cast<float>(r.scores[n])) << what << " fill " << n;
    }
    ASSERT_NEAR(t.probs.data[n], r.probs[n], 1e-5) << what << " prob " << n;
  }
  for (size_t n = 0; n < r.output.size(); ++n)
    ASSERT_NEAR(t.output.data[n], r.output[n], testing::tolerance(r.output[n])) << what << " output " << n;
}

void expectRaw(const AttentionWorkspace& w, Raw raw, const std::string& what) {
  const RawScoreBlocks& blocks = w.rawScoreBlocks();
  const std::string counts = what + " (cached " + std::to_string(blocks.cached) + ", extended " +
                             std::to_string(blocks.extended) + ", computed " + std::to_string(blocks.computed) + ")";
  switch (raw) {
    case Raw::Fresh:
      EXPECT_GT(blocks.computed, 0) << counts;
      EXPECT_EQ(blocks.cached + blocks.extended, 0) << counts;
      EXPECT_FALSE(w.rawScoresReused()) << counts;
      break;
    case Raw::Extended:
      EXPECT_GT(blocks.extended, 0) << counts;
      EXPECT_EQ(blocks.computed, 0) << counts;
      EXPECT_FALSE(w.rawScoresReused()) << counts;
      break;
    case Raw::Cached:
      EXPECT_GT(blocks.cached, 0) << counts;
      EXPECT_EQ(blocks.extended + blocks.computed, 0) << counts;
      EXPECT_TRUE(w.rawScoresReused()) << counts;
      break;
  }
}

// Where every sequence starts: a causal mask, -inf fill, 1 / sqrt(d), no raw scores kept (as the app runs).
AttentionOptions causalOptions(const CacheShape& c) {
  AttentionOptions o;
  o.heads = c.H;
  o.mask = mask("causal");
  o.keep_raw_scores = false;
  return o;
}

uint64_t mapBytes(const AttentionInputs& in, int64_t H) {
  return static_cast<uint64_t>(4 * in.query.dim(0) * in.query.dim(1) * in.key.dim(1) * H);
}

TEST_P(RawScoreCacheTest, IncrementalStepsEqualFromScratchRunsAndUseTheCache) {
  const CacheShape& c = GetParam();
  AttentionInputs in = makeInputs(c);
  AttentionOptions o = causalOptions(c);
  AttentionWorkspace workspace;
  std::shared_ptr<const AttentionTrace> held;  // as the screen holds the previous trace
  for (const Step& step : kSteps) {
    if (step.mha_only && c.G > 0) continue;
    step.change(o, in);
    held = workspace.run(in, o, true, mapBytes(in, o.heads));
    EXPECT_EQ(workspace.projectionsReused(), step.projections_reused) << step.name;
    EXPECT_EQ(workspace.rawCacheBytes(), mapBytes(in, o.heads)) << step.name;
    expectRaw(workspace, step.raw, step.name);
    const AttentionTrace fresh = runAttention(in, o);
    expectSameMaps(*held, fresh, step.name);
    if (o.mistake == Mistake::None && !o.train) expectReference(*held, in, o, step.name);
  }
  // Other heads: new projections, a new cache of the new size.
  o.heads = c.other_H;
  o.mask = mask("causal");
  held = workspace.run(in, o, true, mapBytes(in, o.heads));
  EXPECT_FALSE(workspace.projectionsReused());
  EXPECT_EQ(workspace.rawCacheBytes(), mapBytes(in, o.heads));
  expectRaw(workspace, Raw::Fresh, "H changes");
  expectSameMaps(*held, runAttention(in, o), "H changes");
  o.mask = mask("none");
  held = workspace.run(in, o, true, mapBytes(in, o.heads));
  expectRaw(workspace, Raw::Extended, "H changed, none");
  expectSameMaps(*held, runAttention(in, o), "H changed, none");
}

// The cache only where it fits the cap; a run that does not use it drops it, so it can
// never serve a later run raw scores of other projections.
TEST_P(RawScoreCacheTest, CapFullRecomputeAndKeptRawScoresDropTheCache) {
  const CacheShape& c = GetParam();
  AttentionInputs in = makeInputs(c);
  AttentionOptions o = causalOptions(c);
  const uint64_t bytes = mapBytes(in, c.H);
  AttentionWorkspace workspace;
  auto runAndCheck = [&](bool incremental, uint64_t cap, const std::string& what) {
    const std::shared_ptr<const AttentionTrace> t = workspace.run(in, o, incremental, cap);
    const AttentionTrace fresh = runAttention(in, o);
    expectSameMaps(*t, fresh, what);
    if (o.keep_raw_scores) {
      EXPECT_EQ(t->raw_scores.data, fresh.raw_scores.data) << what;
    }
  };

  runAndCheck(true, bytes - 1, "one byte over the cap");
  EXPECT_EQ(workspace.rawCacheBytes(), 0u);
  expectRaw(workspace, Raw::Fresh, "no cache");
  o.mask = mask("none");
  runAndCheck(true, bytes - 1, "over the cap, mask none");
  EXPECT_TRUE(workspace.projectionsReused());
  expectRaw(workspace, Raw::Fresh, "over the cap, mask none");

  runAndCheck(true, bytes, "cap = the maps' bytes");
  EXPECT_EQ(workspace.rawCacheBytes(), bytes);
  expectRaw(workspace, Raw::Fresh, "cache made");
  o.mask = mask("causal");
  runAndCheck(true, bytes, "from the cache");
  expectRaw(workspace, Raw::Cached, "from the cache");

  // A full recompute (the bench's) on other inputs drops the cache: the next incremental
  // run reuses that run's projections but must not read the old inputs' raw scores.
  in.key.data[0] += 0.5f;
  in.value = in.key;
  runAndCheck(false, bytes, "full recompute, new key");
  EXPECT_EQ(workspace.rawCacheBytes(), 0u);
  runAndCheck(true, bytes, "incremental after a full recompute");
  EXPECT_TRUE(workspace.projectionsReused());
  expectRaw(workspace, Raw::Fresh, "incremental after a full recompute");
  runAndCheck(true, bytes, "again");
  expectRaw(workspace, Raw::Cached, "again");

  // Raw scores kept in the trace: no cache (the trace has them all), kept raw scores right.
  o.keep_raw_scores = true;
  runAndCheck(true, bytes, "keep_raw_scores");
  EXPECT_EQ(workspace.rawCacheBytes(), 0u);
  o.keep_raw_scores = false;
  runAndCheck(true, bytes, "after keep_raw_scores");
  expectRaw(workspace, Raw::Fresh, "after keep_raw_scores");

  // The cap falls below the maps: the cache goes, the run is still right.
  runAndCheck(true, bytes / 2, "cap halved");
  EXPECT_EQ(workspace.rawCacheBytes(), 0u);
  expectRaw(workspace, Raw::Fresh, "cap halved");
}

INSTANTIATE_TEST_SUITE_P(Table, RawScoreCacheTest, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<CacheShape>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnscope
