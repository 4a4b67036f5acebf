// LatestJobWorker (app/gui/jobs/latest_job_worker.h), the one shape of the app's background
// work: the newest job wins (Latest) or every job runs in order (Queue).
#include "gui/jobs/latest_job_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace attnscope {
namespace {

struct Echo {
  int request = 0;
  uint64_t generation = 0;
  bool stopped_early = false;  // keepGoing() turned false while it ran
};

// Waits (bounded) until the worker hands back a result.
template <typename Worker>
auto pollUntil(Worker& worker) {
  for (int i = 0; i < 5000; ++i) {
    if (auto result = worker.poll()) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return decltype(worker.poll())();
}

// A job that holds the thread until `release` is set, so that later posts wait behind it.
struct Gate {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
};

TEST(LatestJobWorker, NewestPostReplacesWaitingJobsAndStaleResultsNeverAppear) {
  Gate gate;
  std::vector<int> ran;  // worker thread only until the worker is gone
  {
    using Worker = LatestJobWorker<int, Echo>;
    Worker worker([&](int& request, const Worker::Job& job) {
      if (request == 0) {
        gate.started.set_value();
        gate.released.wait();
      }
      ran.push_back(request);
      return Echo{request, job.generation(), false};
    });
    EXPECT_EQ(worker.post(0), 1u);
    gate.started.get_future().wait();
    EXPECT_EQ(worker.post(1), 2u);
    EXPECT_EQ(worker.post(2), 3u);
    EXPECT_EQ(worker.post(3), 4u);
    EXPECT_TRUE(worker.superseded(1));
    EXPECT_FALSE(worker.superseded(4));
    EXPECT_TRUE(worker.busy());
    gate.release.set_value();
    const std::shared_ptr<const Echo> result = pollUntil(worker);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->request, 3);
    EXPECT_EQ(result->generation, 4u);
    EXPECT_FALSE(worker.poll());  // once
    EXPECT_FALSE(worker.busy());
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 3}));  // 1 and 2 were replaced while 0 ran
}

TEST(LatestJobWorker, SupersededJobStopsEarlyAndCancelledJobStillReports) {
  using Worker = LatestJobWorker<int, Echo>;
  Worker worker(
      [](int& request, const Worker::Job& job) {
        Echo echo{request, job.generation(), false};
        if (request == 0) return echo;  // a short job
        job.progress(0.5);
        for (int i = 0; i < 20000 && !echo.stopped_early; ++i) {
          echo.stopped_early = !job.keepGoing();
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return echo;
      },
      JobOptions{JobPolicy::Latest, 0, -1.0});
  EXPECT_EQ(worker.progress(), -1.0);
  worker.post(1);  // long: superseded by the next post, its result dropped
  while (worker.progress() != 0.5) std::this_thread::yield();
  worker.post(0);
  std::shared_ptr<const Echo> result = pollUntil(worker);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->request, 0);
  EXPECT_EQ(worker.progress(), -1.0);  // back to idle after each job

  worker.post(2);  // long: cancelled, and its result comes back
  while (worker.progress() != 0.5) std::this_thread::yield();
  worker.cancel();
  result = pollUntil(worker);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->request, 2);
  EXPECT_TRUE(result->stopped_early);
}

TEST(LatestJobWorker, QueueRunsEveryJobInOrderAndFinishesThemAtShutdown) {
  Gate gate;
  std::vector<int> ran;
  std::vector<int> polled;
  {
    using Worker = LatestJobWorker<int, Echo>;
    Worker worker(
        [&](int& request, const Worker::Job& job) {
          if (request == 0) {
            gate.started.set_value();
            gate.released.wait();
          }
          ran.push_back(request);
          return Echo{request, job.generation(), false};
        },
        JobOptions{JobPolicy::Queue});
    worker.post(0);
    gate.started.get_future().wait();
    for (int request = 1; request <= 4; ++request) worker.post(request);
    EXPECT_FALSE(worker.superseded(1));  // nothing is superseded in a queue
    gate.release.set_value();
    for (int i = 0; i < 3; ++i) {
      const std::shared_ptr<const Echo> result = pollUntil(worker);
      ASSERT_TRUE(result);
      polled.push_back(result->request);
    }
    worker.post(5);
    worker.post(6);
  }  // shutdown: what was posted still runs
  EXPECT_EQ(polled, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace attnscope
