#include "model/sweep_runs.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>

namespace attnscope {

void runSweepGroups(ModelRunner& runner, const std::vector<int64_t>& sizes,
                    const std::function<void(ModelRunner& runner, int64_t group, int64_t k)>& run,
                    const Progress& progress) {
  const int64_t groups = static_cast<int64_t>(sizes.size());
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  const int workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), groups)));
  std::vector<std::unique_ptr<ModelRunner>> siblings;
  for (int w = 1; w < workers; ++w) siblings.push_back(std::make_unique<ModelRunner>(runner.sibling()));
  std::atomic<bool> stop{false};
  bool cancelled = false;
  std::exception_ptr failure;
  std::mutex lock;
  int64_t done = 0;
  // Nested regions (the runs' own GEMMs and heads) run on their one thread.
#pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
  for (int64_t g = 0; g < groups; ++g) {
    const int w = omp_get_thread_num();
    ModelRunner& mine = w == 0 ? runner : *siblings[w - 1];
    for (int64_t k = 0; k < sizes[g] && !stop; ++k) {
      try {
        run(mine, g, k);
        std::lock_guard<std::mutex> hold(lock);
        ++done;
        if (progress && !stop && !progress(static_cast<double>(done) / static_cast<double>(total))) cancelled = stop = true;
      } catch (...) {  // nothing may leave a parallel region
        std::lock_guard<std::mutex> hold(lock);
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    }
  }
  runner.setInterventions({});
  if (failure) std::rethrow_exception(failure);
  if (cancelled) throw Cancelled();
}

}  // namespace attnscope
