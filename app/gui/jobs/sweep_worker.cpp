#include "gui/jobs/sweep_worker.h"

#include "gui/jobs/job_error.h"

namespace attnscope {
namespace {

constexpr int kWorkerNice = 10;  // as the compute worker: the UI thread comes first

SweepResult runSweep(const SweepRequest& request, const LatestJobWorker<SweepRequest, SweepResult>::Job& job) {
  SweepResult result;
  result.text = request.text;
  result.mode = request.mode;
  try {
    if (!request.weights.loaded()) throw InputError("ablation sweep: no model loaded yet");
    ModelRunner runner(request.weights.model);
    const ModelTokens tokens = tokensForRun(*request.weights.model, request.text, request.truncate);
    result.sweep = std::make_shared<const AblationSweep>(
        ablationSweep(runner, tokens, request.position, request.mode, [&](double fraction) {
          job.progress(fraction);
          return job.keepGoing();
        }));
  } catch (const Cancelled&) {
    result.cancelled = true;
  } catch (...) {
    result.error = jobErrorLine("out of memory during the ablation sweep");
  }
  job.progress(-1.0);
  return result;
}

}  // namespace

SweepWorker::SweepWorker() : jobs_(runSweep, JobOptions{JobPolicy::Latest, kWorkerNice, -1.0}) {}

}  // namespace attnscope
