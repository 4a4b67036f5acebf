// Model folder loader (attnscope-model/1): config.json, vocab.json, training.json and the
// tensors, built from one fuzzer input (see writeSections; any *.json or *.npy name), then
// loaded and, when small, run on a short text.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "model/model.h"

namespace {
attnscope::fuzz::Scratch scratch;

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = scratch.fresh();
  attnscope::fuzz::writeSections(std::string(reinterpret_cast<const char*>(data), size), dir,
                                 [](const std::string& name) { return endsWith(name, ".json") || endsWith(name, ".npy"); });
  std::shared_ptr<attnscope::Model> model;
  try {
    model = std::make_shared<attnscope::Model>(attnscope::loadModel(dir.string()));
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), dir.string());
    return 0;
  }
  const attnscope::ModelConfig& c = model->config;
  if (c.n_layers * (c.hidden * c.hidden + c.hidden * c.mlp_dim) > (1 << 20)) return 0;
  attnscope::ModelRunner runner(model);
  const std::string texts[] = {"ab\nc", std::string("\xff\xfe\x00z", 4), std::string(70, 'a')};
  for (const std::string& text : texts) {
    try {
      const attnscope::ModelRun& run = runner.run(text);
      for (int64_t t = 0; t < static_cast<int64_t>(run.tokens.ids.size()); ++t) {
        attnscope::topPredictions(*model, run.logits.row(t), run.logits.vocab(), 3);
        attnscope::tokenLabel(*model, run.tokens.ids[t]);
      }
    } catch (const attnscope::InputError&) {
    }
  }
  return 0;
}
