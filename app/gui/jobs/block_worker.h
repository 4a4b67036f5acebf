// A block of a shown run's results computed when it is looked at (the predictions around a
// position, the logit lens's columns), on its own worker: from the run's source (kept alive
// while the block computes) and a position. The block comes back with its source, so that
// a block of a run no longer shown is told apart, with its wall time and error line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "gui/jobs/job_error.h"
#include "gui/jobs/latest_job_worker.h"

namespace attnscope {

template <class Source, class Block>
class BlockWorker {
 public:
  struct Done {
    std::shared_ptr<const Source> source;
    Block block;
    double milliseconds = 0.0;
    std::string error;  // "" on success
  };

  // compute(source, position): the block holding position; out_of_memory: the job's advice
  // when it runs out (jobErrorLine).
  BlockWorker(std::function<Block(const Source&, int64_t)> compute, std::string out_of_memory)
      : jobs_([compute = std::move(compute), out_of_memory = std::move(out_of_memory)](Request& request,
                                                                                       const typename Jobs::Job&) {
          Done done;
          done.source = request.source;
          const auto start = std::chrono::steady_clock::now();
          try {
            done.block = compute(*request.source, request.position);
          } catch (...) {
            done.error = jobErrorLine(out_of_memory);
          }
          done.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
          return done;
        }) {}

  void post(std::shared_ptr<const Source> source, int64_t position) { jobs_.post({std::move(source), position}); }
  std::shared_ptr<const Done> poll() { return jobs_.poll(); }  // the newest finished block, once

 private:
  struct Request {
    std::shared_ptr<const Source> source;
    int64_t position = 0;
  };
  using Jobs = LatestJobWorker<Request, Done>;
  Jobs jobs_;  // last member: its thread starts after the others exist
};

}  // namespace attnscope
