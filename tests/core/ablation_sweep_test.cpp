// The sweeps (model/ablation_sweep.h, model/patching.h) on the shipped python-code model:
// each entry equals, bit for bit, what a fresh runner (maps kept, whole logits blocks, every
// layer computed) gives for that one intervention, although a sweep's runs keep no maps,
// unembed one row, recompute only from the intervened layer (and position) on and take the
// intervened layer's attention from the run before when only a head's z changed; and a runner
// that keeps no residuals can turn its last intervention off again (it then has no layer
// inputs to resume from).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/model_source.h"
#include "model/ablation_sweep.h"
#include "model/patching.h"
#include "model/model.h"

namespace attnscope {
namespace {

std::shared_ptr<const Model> pythonCode() {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  EXPECT_NE(it, shipped.end());
  return std::make_shared<const Model>(loadModel(it->folder));
}

// The references on one thread (a run's bits do not depend on it; the sweeps use every
// thread): a loaded machine's OpenMP barriers made the fresh runs of a tiny model take seconds.
struct OneThread {
  const int before = omp_get_max_threads();
  OneThread() { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(before); }
};

const std::string kText = "def area(w, h):\n    return w * h\n\nprint(area(2, 3))\n";

TEST(AblationSweep, EachEntryIsAFreshRunsChange) {
  const auto model = pythonCode();
  const ModelTokens tokens = tokenizeForModel(*model, kText);
  const int64_t V = model->config.vocab, H = model->config.heads, position = 20;
  const AblationMode mode = AblationMode::Mean;  // zero: tests/cli/test_ablation_sweep.py, against float64
  ModelRunner runner(model);
  const AblationSweep sweep = ablationSweep(runner, tokens, position, mode);
  const OneThread one_thread;
  ModelRunner plain(model);
  const float* base = plain.run(tokens).logits.row(position);
  EXPECT_EQ(sweep.top, std::max_element(base, base + V) - base);
  EXPECT_DOUBLE_EQ(sweep.logprob, logProbability(base, V, sweep.top));
  for (int64_t n = 0; n < model->config.n_layers * H; ++n) {
    ModelRunner fresh(model);
    Interventions one;
    one.ablations.push_back({n / H, n % H, mode, ""});
    fresh.setInterventions(one);
    const double want = logProbability(fresh.run(tokens).logits.row(position), V, sweep.top) - sweep.logprob;
    EXPECT_EQ(sweep.effect.data[n], static_cast<float>(want)) << "head " << n;
  }
  EXPECT_TRUE(runner.interventions().empty());
}

TEST(AblationSweep, CancelAndBadPosition) {
  const auto model = pythonCode();
  ModelRunner runner(model);
  const ModelTokens tokens = tokenizeForModel(*model, kText);
  int reports = 0;
  EXPECT_THROW(ablationSweep(runner, tokens, -1, AblationMode::Zero, [&](double) { return ++reports < 3; }), Cancelled);
  EXPECT_EQ(reports, 3);
  EXPECT_TRUE(runner.interventions().empty());
  EXPECT_THROW(ablationSweep(runner, tokens, static_cast<int64_t>(tokens.ids.size()), AblationMode::Zero), InputError);
}

// The patching sweep's tables cell by cell against fresh runners, each with its one patch
// (a head's z or a residual row from the clean run): the same float, not merely close.
TEST(PatchSweep, EachCellIsAFreshPatchedRun) {
  const auto model = pythonCode();
  const ModelTokens clean = tokenizeForModel(*model, kText);
  ModelTokens corrupt = clean;
  corrupt.ids[clean.ids.size() / 2] = (clean.ids[clean.ids.size() / 2] + 1) % model->config.vocab;
  const int64_t N = model->config.n_layers, H = model->config.heads, L = static_cast<int64_t>(clean.ids.size());
  const int64_t D = model->config.hidden, answer = clean.ids.back(), wrong = corrupt.ids.front();
  ModelRunner runner(model);
  const PatchTables t = patchSweep(runner, clean, corrupt, answer, wrong);
  const OneThread one_thread;
  ModelRunner source(model);
  source.keepResiduals(true);
  const ModelRun& c = source.run(clean);
  const auto fresh = [&](Interventions one) {
    ModelRunner r(model);
    r.setInterventions(std::move(one));
    return static_cast<float>(patchMetric(r.run(corrupt), answer, wrong));
  };
  for (int64_t l = 0; l < N; ++l) {
    const int64_t d = c.layers[l].d;
    for (int64_t h = 0; h < H; ++h) {
      const auto z = c.layers[l].context_heads.data.begin() + h * L * d;
      Interventions one;
      one.head_patches.push_back({l, h, std::vector<float>(z, z + L * d)});
      EXPECT_EQ(t.heads.data[l * H + h], fresh(std::move(one))) << "L" << l << "H" << h;
    }
    for (int64_t p = 0; p < L; ++p) {
      const auto x = c.residuals.data.begin() + (l * L + p) * D;
      Interventions one;
      one.residual_patches.push_back({l, p, std::vector<float>(x, x + D)});
      EXPECT_EQ(t.resid.data[l * L + p], fresh(std::move(one))) << "layer " << l << " position " << p;
    }
  }
  EXPECT_EQ(t.clean, patchMetric(c, answer, wrong));
  EXPECT_TRUE(runner.interventions().empty());
}

// Without kept residuals the layer inputs live only while an intervention is set: turning
// the last one off reruns every layer (it crashed resuming from inputs just dropped).
TEST(AblationSweep, InterventionOffAgainWithoutResiduals) {
  const auto model = pythonCode();
  const ModelTokens tokens = tokenizeForModel(*model, kText);
  ModelRunner runner(model), fresh(model);
  const Tensor want = fresh.run(tokens).logits.dense();
  Interventions on;
  on.ablations.push_back({1, 3, AblationMode::Zero, ""});
  runner.run(tokens);
  runner.setInterventions(on);
  runner.run(tokens);
  runner.setInterventions({});
  const Tensor got = runner.run(tokens).logits.dense();
  ASSERT_EQ(got.shape, want.shape);
  EXPECT_EQ(0, std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)));
}

}  // namespace
}  // namespace attnscope
