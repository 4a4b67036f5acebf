#include "gui/jobs/job_runner.h"

namespace attnscope {

FolderModelRunner& jobRunner(std::unique_ptr<FolderModelRunner>& runner, const std::string& folder,
                             const FolderWeights& weights, bool keep_shared) {
  if (weights.loaded() && weights.folder == folder) {
    if (!keep_shared || !runner || runner->weights().model != weights.model) {
      runner.reset();
      runner = std::make_unique<FolderModelRunner>(weights);
    }
  } else if (!runner || runner->folder() != folder) {
    runner.reset();  // the old model's weights go before the new one's load
    runner = std::make_unique<FolderModelRunner>(folder);
  }
  return *runner;
}

}  // namespace attnscope
