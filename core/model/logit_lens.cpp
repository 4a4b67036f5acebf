#include "model/logit_lens.h"

namespace attnscope {

LogitLens logitLens(const Tensor& residuals, const OutputHead& head, int64_t k) {
  LogitLens lens;
  if (residuals.empty()) return lens;
  const int64_t layers = residuals.dim(0), L = residuals.dim(1), D = residuals.dim(2);
  Tensor x({L, D}), logits;  // one layer's residual [L, D] and its logits [L, V]
  for (int64_t l = 0; l < layers; ++l) {
    std::copy(residuals.data.begin() + l * L * D, residuals.data.begin() + (l + 1) * L * D, x.data.begin());
    head(x, logits);
    if (logits.empty()) return LogitLens();
    if (l == 0) lens = {layers, L, std::min(k, logits.dim(1)), {}, {}};
    for (int64_t t = 0; t < L; ++t) {
      const std::vector<double> p = nextTokenProbs(&logits.data[t * logits.dim(1)], logits.dim(1));  // softmax in double
      for (int64_t id : topIds(p, lens.k)) {
        lens.ids.push_back(id);
        lens.probs.push_back(static_cast<float>(p[id]));
      }
    }
  }
  return lens;
}

LogitLens modelLens(const Model& model, const ModelRun& run, int64_t k) {
  return logitLens(run.residuals, [&](const Tensor& x, Tensor& logits) {
    if (!model.hasHead()) {  // an encoder without masked-LM head: no lens
      logits = Tensor();
      return;
    }
    logits = Tensor({x.dim(0), model.config.vocab});
    modelOutputLogits(model, x, logits.data.data());
  }, k);
}

LogitLens lensOfTokens(ModelRunner& runner, ModelTokens tokens, int64_t k) {
  runner.keepResiduals(true);
  return modelLens(runner.model(), runner.run(std::move(tokens)), k);
}

}  // namespace attnscope
