// TiledWorkspace (attention/tiles.h): a tiled run that changes only the mask, the fill or the
// score rule (scale, temperature, soft-cap, ALiBi) takes the last run's Q and K over instead of
// projecting again, and its overview and exact tiles equal a fresh prepareTiled's bit for bit;
// any change to the inputs or to what shapes Q and K (H, G, RoPE) projects again.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention/tiles.h"
#include "reference.h"

namespace attnscope {
namespace {

struct WorkspaceCase {
  const char* name;
  int64_t B, L, S, D, H;
  bool self;
  int64_t G;  // > 0: K/V heads
};

std::ostream& operator<<(std::ostream& os, const WorkspaceCase& c) { return os << c.name; }

//                                    name           B   L   S   D  H  self   G
const WorkspaceCase kWorkspaceCases[] = {
    {"self_mha",       1, 70, 70, 16, 4, true, 0},
    {"cross_batch2",   2, 33, 47, 24, 3, false, 0},
    {"gqa",            1, 50, 50, 16, 4, true, 2},
};

AttentionInputs makeInputs(const WorkspaceCase& c, unsigned seed = 7) {
  std::mt19937 rng(seed);
  AttentionInputs in = testing::randomInputs({c.B, c.L, c.S, c.D, c.D, c.D, c.D}, rng, c.self, 0.5, 3.0);
  if (c.G > 0) testing::keepKeyValueRows(in, c.G * (c.D / c.H));
  in.valid_lens.assign(static_cast<size_t>(c.B), c.S);
  in.valid_lens.back() = c.S / 2;
  return in;
}

// The overview and one exact tile of every map must be the same numbers bit for bit
// (masked cells: the same fill, -inf == -inf).
void expectSameMaps(const TiledAttention& a, const TiledAttention& b, const std::string& what) {
  const int64_t rows = std::min<int64_t>(a.L, 13), cols = std::min<int64_t>(a.S, 11);
  const std::optional<Overview> x = computeOverview(a, rows, cols), y = computeOverview(b, rows, cols);
  ASSERT_TRUE(x && y) << what;
  EXPECT_EQ(x->probs.data, y->probs.data) << what;
  EXPECT_EQ(x->scores.data, y->scores.data) << what;
  EXPECT_EQ(x->allowed.data, y->allowed.data) << what;
  EXPECT_EQ(x->fully_masked.data, y->fully_masked.data) << what;
  for (int64_t bh = 0; bh < a.B * a.H; ++bh) {
    const Tile s = computeTile(a, bh / a.H, bh % a.H, 3, a.L - 5, 2, a.S - 4);
    const Tile t = computeTile(b, bh / a.H, bh % a.H, 3, a.L - 5, 2, a.S - 4);
    EXPECT_EQ(s.scores.data, t.scores.data) << what << " map " << bh;
    EXPECT_EQ(s.probs.data, t.probs.data) << what << " map " << bh;
    EXPECT_EQ(s.allowed.data, t.allowed.data) << what << " map " << bh;
  }
}

class TiledWorkspaceTest : public ::testing::TestWithParam<WorkspaceCase> {};

TEST_P(TiledWorkspaceTest, ScoreRuleAndMaskChangesReuseQAndKWithTheSameNumbers) {
  const WorkspaceCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse("none");
  TiledWorkspace workspace;
  const TiledAttention first = workspace.prepare(in, o);
  EXPECT_FALSE(workspace.projectionsReused());
  expectSameMaps(first, prepareTiled(in, o), "first run");
  const std::vector<std::pair<std::string, std::function<void(AttentionOptions&)>>> steps = {
      {"causal", [](AttentionOptions& x) { x.mask = MaskSpec::parse("causal"); }},
      {"-1e9 fill", [](AttentionOptions& x) { x.fill = MaskFill::NegBillion; }},
      {"window + padding", [](AttentionOptions& x) { x.mask = MaskSpec::parse("causal-window:6+padding"); }},
      {"temperature 0.6", [](AttentionOptions& x) { x.scale_mode = ScaleMode::Custom, x.custom_scale = 0.42f; }},
      {"no scaling", [](AttentionOptions& x) { x.scale_mode = ScaleMode::None; }},
      {"soft-cap", [](AttentionOptions& x) { x.softcap = 2.5f; }},
      {"ALiBi", [](AttentionOptions& x) { x.alibi = true; }},
      {"sinks", [](AttentionOptions& x) { x.mask = MaskSpec::parse("window:4+sinks:2"); }},
  };
  for (const auto& [what, change] : steps) {
    change(o);
    const TiledAttention next = workspace.prepare(in, o);
    EXPECT_TRUE(workspace.projectionsReused()) << what;
    EXPECT_EQ(next.q, first.q) << what << ": Q is the first run's";
    EXPECT_EQ(next.k, first.k) << what << ": K is the first run's";
    expectSameMaps(next, prepareTiled(in, o), what);
  }
}

TEST_P(TiledWorkspaceTest, InputOrProjectionChangesProjectAgain) {
  const WorkspaceCase& c = GetParam();
  const AttentionInputs in = makeInputs(c);
  AttentionOptions o;
  o.heads = c.H;
  o.mask = MaskSpec::parse("causal");
  const std::vector<std::pair<std::string, std::function<void(AttentionInputs&, AttentionOptions&)>>> steps = {
      {"one query value", [](AttentionInputs& x, AttentionOptions&) { x.query.data[5] += 0.25f; }},
      {"one key value",
       [](AttentionInputs& x, AttentionOptions&) { x.key.data[x.key.data.size() - 1] *= -1.0f; }},
      {"w_k", [](AttentionInputs& x, AttentionOptions&) { x.w_k.data[3] += 0.5f; }},
      {"b_q", [](AttentionInputs& x, AttentionOptions&) { x.b_q.data[0] -= 1.0f; }},
      {"RoPE", [](AttentionInputs&, AttentionOptions& x) { x.rope = true; }},
      {"RoPE base", [](AttentionInputs&, AttentionOptions& x) { x.rope_base = 500.0; }},
      {"RoPE interleaved", [](AttentionInputs&, AttentionOptions& x) { x.rope_style = RopeStyle::Interleaved; }},
  };
  TiledWorkspace workspace;
  AttentionInputs x = in;
  workspace.prepare(x, o);
  for (const auto& [what, change] : steps) {
    change(x, o);
    const TiledAttention next = workspace.prepare(x, o);
    EXPECT_FALSE(workspace.projectionsReused()) << what;
    expectSameMaps(next, prepareTiled(x, o), what);
    workspace.prepare(x, o);
    EXPECT_TRUE(workspace.projectionsReused()) << what << ", then the same again";
  }
  // Other heads: a new split of the same projections.
  if (c.G == 0) {
    o.heads = c.H == 4 ? 2 : 1;
    const TiledAttention other = workspace.prepare(x, o);
    EXPECT_FALSE(workspace.projectionsReused());
    expectSameMaps(other, prepareTiled(x, o), "other H");
  }
}

TEST(TiledWorkspace, AFailedRunLeavesNothingToReuse) {
  const WorkspaceCase& c = kWorkspaceCases[0];
  AttentionInputs in = makeInputs(c);
  AttentionOptions o;
  o.heads = c.H;
  TiledWorkspace workspace;
  workspace.prepare(in, o);
  AttentionOptions bad = o;
  bad.heads = 3;  // does not divide D = 16
  EXPECT_THROW(workspace.prepare(in, bad), InputError);
  workspace.prepare(in, o);
  EXPECT_TRUE(workspace.projectionsReused()) << "validation fails before anything is replaced";
  in.query.data[0] = NAN;
  EXPECT_THROW(workspace.prepare(in, o), InputError);
  in.query.data[0] = 0.5f;
  workspace.prepare(in, o);
  EXPECT_FALSE(workspace.projectionsReused());
}

INSTANTIATE_TEST_SUITE_P(Cases, TiledWorkspaceTest, ::testing::ValuesIn(kWorkspaceCases),
                         [](const ::testing::TestParamInfo<WorkspaceCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnscope
