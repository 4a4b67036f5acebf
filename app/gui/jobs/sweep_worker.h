// The ablation sweep off the UI thread (model/ablation_sweep.h): each head of the loaded
// model ablated alone, with progress and cancel. The sweep runs on the compute worker's
// weights (shared, not copied) through a runner of its own, so the maps keep following
// keystrokes meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gui/jobs/latest_job_worker.h"
#include "model/ablation_sweep.h"
#include "model/folder_runner.h"

namespace attnscope {

struct SweepRequest {
  FolderWeights weights;                 // the compute worker's (loaded)
  std::string text;                      // the model text
  Truncate truncate = Truncate::None;
  int64_t position = -1;                 // the pinned query, else -1 (the last)
  AblationMode mode = AblationMode::Zero;
};

struct SweepResult {
  std::shared_ptr<const AblationSweep> sweep;  // null on error or cancel
  std::string error;                           // one line ("" otherwise)
  bool cancelled = false;
  std::string text;                            // the request's
  AblationMode mode = AblationMode::Zero;
};

class SweepWorker {
 public:
  SweepWorker();
  void start(SweepRequest request) { jobs_.post(std::move(request)); }
  void cancel() { jobs_.cancel(); }
  // The finished sweep, once; null while it runs.
  std::shared_ptr<const SweepResult> poll() { return jobs_.poll(); }
  double progress() const { return jobs_.progress(); }  // fraction of heads done; < 0 when idle

 private:
  using Jobs = LatestJobWorker<SweepRequest, SweepResult>;
  Jobs jobs_;
};

}  // namespace attnscope
