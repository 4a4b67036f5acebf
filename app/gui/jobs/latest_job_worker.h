// The one shape of background work in the app: a thread that runs jobs posted from the UI
// thread, which only posts and polls. Compute, the compare view's settings variant, the
// zoomed tile, rollout / flow and exports all run on one of these.
//   JobPolicy::Latest  only the newest job matters: a post replaces a job still waiting,
//                      a running job can ask superseded() / keepGoing() to stop early, and
//                      the result of a superseded job is dropped (poll() never shows it).
//   JobPolicy::Queue   every job runs, one at a time, in the order posted; every result
//                      comes back, in order; jobs posted before shutdown still run (exports:
//                      nothing dropped, no file half-written).
// A job's work must not throw: it returns its error in its result.
// Results are shared as std::shared_ptr<const Result>: made once on the worker thread,
// read by the UI without copying.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace attnscope {

enum class JobPolicy { Latest, Queue };

struct JobOptions {
  JobPolicy policy = JobPolicy::Latest;
  int nice = 0;                // the worker thread's nice value (0: as the UI's)
  double idle_progress = -1.0; // progress() before the first job and after each job
};

template <typename Request, typename Result>
class LatestJobWorker {
 public:
  // What a running job may ask its worker (on the worker thread).
  class Job {
   public:
    Job(LatestJobWorker& worker, uint64_t generation) : worker_(worker), generation_(generation) {}
    uint64_t generation() const { return generation_; }
    // A newer job has been posted (Latest policy) or the worker shuts down.
    bool superseded() const { return worker_.superseded(generation_); }
    // Neither superseded nor cancelled (cancel()): a long job checks this between blocks.
    bool keepGoing() const { return worker_.cancelled_ != generation_ && !superseded(); }
    void progress(double fraction) const { worker_.progress_ = fraction; }

   private:
    LatestJobWorker& worker_;
    uint64_t generation_;
  };
  using Work = std::function<Result(Request&, const Job&)>;

  explicit LatestJobWorker(Work work, JobOptions options = {})
      : work_(std::move(work)), options_(options), progress_(options.idle_progress), thread_([this] { loop(); }) {}
  ~LatestJobWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();  // a running job ends (one that checks keepGoing() stops early)
  }
  LatestJobWorker(const LatestJobWorker&) = delete;
  LatestJobWorker& operator=(const LatestJobWorker&) = delete;

  // Queues a job; returns its generation (1, 2, ...). Latest: replaces a job still waiting.
  uint64_t post(Request request) {
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = ++latest_;
      if (options_.policy == JobPolicy::Latest) waiting_.clear();
      waiting_.push_back({std::move(request), generation});
    }
    wake_.notify_one();
    return generation;
  }
  // The newest finished result, once (Latest); the next finished result in order (Queue);
  // null when there is none.
  std::shared_ptr<const Result> poll() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.empty()) return nullptr;
    std::shared_ptr<const Result> result = std::move(done_.front());
    done_.pop_front();
    return result;
  }
  // A job is waiting, running or finished but not polled yet.
  bool busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !waiting_.empty() || running_ || !done_.empty();
  }
  bool superseded(uint64_t generation) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_ || (options_.policy == JobPolicy::Latest && generation != latest_);
  }
  // Asks the newest job to stop (keepGoing() turns false); what it returns still comes back.
  void cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = latest_;
  }
  // Called on the worker thread each time a result is ready to poll (the app wakes its frame
  // loop instead of polling every frame while a job runs).
  void notifyOnResult(std::function<void()> on_result) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_result_ = std::move(on_result);
  }
  // What the running job reported through Job::progress (idle_progress between jobs).
  double progress() const { return progress_.load(); }

 private:
  struct Pending {
    Request request;
    uint64_t generation;
  };

  void loop() {
    if (options_.nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options_.nice);
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !waiting_.empty(); });
      if (waiting_.empty() || (stop_ && options_.policy == JobPolicy::Latest)) return;
      Pending pending = std::move(waiting_.front());
      waiting_.pop_front();
      running_ = true;
      lock.unlock();
      auto result = std::make_shared<const Result>(work_(pending.request, Job(*this, pending.generation)));
      progress_ = options_.idle_progress;  // also when the job stopped early
      lock.lock();
      running_ = false;
      if (!superseded(pending.generation, lock)) {
        if (options_.policy == JobPolicy::Latest) done_.clear();
        done_.push_back(std::move(result));
        if (on_result_) on_result_();
      }
    }
  }
  // superseded() with mutex_ held; a result made while stopping still counts.
  bool superseded(uint64_t generation, const std::unique_lock<std::mutex>&) const {
    return options_.policy == JobPolicy::Latest && generation != latest_;
  }

  const Work work_;
  const JobOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> waiting_;
  std::deque<std::shared_ptr<const Result>> done_;
  std::function<void()> on_result_;
  uint64_t latest_ = 0;  // newest posted
  bool running_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> cancelled_{0};  // the job cancel() stops
  std::atomic<double> progress_;
  std::thread thread_;  // last member: starts after the others exist
};

}  // namespace attnscope
