#include "model/ablation_sweep.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/sweep_runs.h"

namespace attnscope {

double logProbability(const float* logits, int64_t V, int64_t id) {
  const double top = *std::max_element(logits, logits + V);
  double sum = 0.0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - top);
  return static_cast<double>(logits[id]) - top - std::log(sum);
}

AblationSweep ablationSweep(ModelRunner& runner, const ModelTokens& tokens, int64_t position, AblationMode mode,
                            const Progress& progress) {
  const Model& m = runner.model();
  const int64_t N = m.config.n_layers, H = m.config.heads, L = static_cast<int64_t>(tokens.ids.size()), V = m.config.vocab;
  if (!m.hasHead()) throw InputError(m.folder + ": the ablation sweep reads predictions, and this encoder has no output head");
  const int64_t p = position < 0 ? L + position : position;
  if (p < 0 || p >= L)
    throw InputError("ablation sweep: position " + std::to_string(position) + " is outside the text of " +
                     std::to_string(L) + " " + tokenUnit(m));
  runner.setInterventions({});
  runner.logitRows(LogitRows{false, {p}, false});
  runner.keepMapsWithin(0);  // only a logits row is read: no [H, L, L] maps written (same bits, cached_rows.h)
  AblationSweep sweep;
  sweep.position = p;
  const float* plain = runner.run(tokens).logits.row(p);  // [V]
  sweep.top = std::max_element(plain, plain + V) - plain;
  sweep.logprob = logProbability(plain, V, sweep.top);
  sweep.effect = Tensor({N, H});
  // A group per layer, its heads one after another on one runner: going from head (l, h) to
  // (l, h + 1) changes layer l's z only, so each run computes layer l's output rows and the
  // layers after it (model.h: the rows before come from the runner's cache).
  runSweepGroups(runner, std::vector<int64_t>(static_cast<size_t>(N), H), [&](ModelRunner& r, int64_t l, int64_t h) {
    Interventions one;
    one.ablations.push_back({l, h, mode, ""});
    r.setInterventions(std::move(one));
    sweep.effect.data[l * H + h] = static_cast<float>(logProbability(r.run(tokens).logits.row(p), V, sweep.top) - sweep.logprob);
  }, progress);
  return sweep;
}

}  // namespace attnscope
