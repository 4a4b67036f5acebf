// The ablation sweep (model/ablation_sweep.h) on the shipped python-code model: each entry is
// the change a fresh runner sees with that head ablated (the sweep's runs recompute only from
// the head's layer on, from kept rows); and a runner that keeps no residuals can turn its last
// intervention off again (it then has no layer inputs to resume from).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/model_source.h"
#include "model/ablation_sweep.h"
#include "model/model.h"

namespace attnscope {
namespace {

std::shared_ptr<const Model> pythonCode() {
  const std::vector<ShippedModel> shipped = shippedModels();
  const auto it = std::find_if(shipped.begin(), shipped.end(), [](const ShippedModel& m) { return m.name == "python-code"; });
  EXPECT_NE(it, shipped.end());
  return std::make_shared<const Model>(loadModel(it->folder));
}

const std::string kText = "def area(w, h):\n    return w * h\n\nprint(area(2, 3))\n";

TEST(AblationSweep, EachEntryIsAFreshRunsChange) {
  const auto model = pythonCode();
  const ModelTokens tokens = tokenizeForModel(*model, kText);
  const int64_t V = model->config.vocab, H = model->config.heads, position = 20;
  const AblationMode mode = AblationMode::Mean;  // zero: tests/cli/test_ablation_sweep.py, against float64
  ModelRunner runner(model);
  const AblationSweep sweep = ablationSweep(runner, tokens, position, mode);
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
    EXPECT_NEAR(sweep.effect.data[n], want, 1e-5) << "head " << n;
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
