// The patching view's sweep (features/patching) runs here, off the UI thread: a
// LatestJobWorker whose job tokenizes the clean and the corrupt text, reads the answer and the
// wrong token, and runs activation patching (model/patching.h: every head's z and the residual
// stream at every layer and position from the clean run into the corrupt one) on a runner of
// its own. A newer edit supersedes the running sweep at its next patched run; Cancel stops it.
// The runner is kept between jobs on the same weights, so a sweep recomputes each patched run
// only from the patched layer (and position) on, and the clean run only from its first changed
// token; it runs on the weights the maps' worker loaded (shared, never copied).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/jobs/latest_job_worker.h"
#include "model/folder_runner.h"

namespace attnscope {

struct PatchRequest {
  std::string folder;  // a model folder of either kind
  FolderWeights weights;  // the folder's weights when already loaded (else loaded here)
  std::string clean, corrupt, answer, wrong;  // as typed
};

// A typed token read against the vocabulary: id when it is one token, else its pieces.
struct PatchToken {
  std::string typed;
  TypedToken token;
  std::string label;  // the token as the maps label it ("" when not one token)
};

struct PatchResult {
  uint64_t job = 0;
  std::string model;
  std::string posted_clean, posted_corrupt;  // the texts swept
  int64_t clean_tokens = -1, corrupt_tokens = -1;  // -1: not tokenized (error)
  std::vector<std::string> clean_labels, corrupt_labels;  // [L] the maps' labels
  PatchToken answer, wrong;
  // Why there are no tables ("" when there are): unequal lengths, a token that is not one, an error.
  std::string why_not;
  bool error = false, cancelled = false;
  std::optional<PatchTables> tables;
  // (patched - corrupt) / (clean - corrupt), NaN everywhere when clean = corrupt.
  std::vector<float> heads_normalised, resid_normalised;  // [N, H], [N, L]
  int64_t layers = 0, heads = 0;
  std::vector<std::string> layer_labels, head_labels;  // "L0".., "H0"..
  float range = 1.0f;  // the colour scale: +-max(1, the largest |normalised| cell)
  double ms = 0.0;  // the sweep's wall time
};

class PatchWorker {
 public:
  PatchWorker();
  uint64_t post(PatchRequest request) { return jobs_.post(std::move(request)); }
  void cancel() { jobs_.cancel(); }
  std::shared_ptr<const PatchResult> poll() { return jobs_.poll(); }
  bool busy() const { return jobs_.busy(); }
  double progress() const { return jobs_.progress(); }

 private:
  using Jobs = LatestJobWorker<PatchRequest, PatchResult>;
  PatchResult run(const PatchRequest& request, const Jobs::Job& job);
  std::unique_ptr<FolderModelRunner> runner_;  // worker thread only (jobs/job_runner.h), kept between jobs
  Jobs jobs_;  // last member: its thread starts after the others exist
};

}  // namespace attnscope
