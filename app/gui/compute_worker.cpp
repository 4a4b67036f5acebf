#include "gui/compute_worker.h"

#include <chrono>
#include <exception>

namespace attnscope {
namespace {

InputFacts readFacts(const AttentionInputs& in, int64_t heads) {
  InputFacts f;
  if (in.query.shape.size() != 3 || in.key.shape.size() != 3 || in.value.shape.size() != 3 ||
      in.w_q.shape.size() != 2 || in.w_k.shape.size() != 2) {
    return f;
  }
  f.known = true;
  f.B = in.query.dim(0);
  f.L = in.query.dim(1);
  f.S_key = in.key.dim(1);
  f.S_value = in.value.dim(1);
  f.H = heads;
  f.D_q = in.w_q.dim(0);
  f.D_k = in.w_k.dim(0);
  return f;
}

}  // namespace

ComputeWorker::ComputeWorker() : thread_([this] { run(); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t ComputeWorker::post(const Settings& settings) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++latest_generation_;
    waiting_ = settings;
    waiting_generation_ = generation;
  }
  wake_.notify_one();
  return generation;
}

std::optional<ComputeResult> ComputeWorker::poll() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<ComputeResult> result;
  result.swap(done_);
  return result;
}

void ComputeWorker::run() {
  for (;;) {
    Settings settings;
    uint64_t generation;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || waiting_.has_value(); });
      if (stop_) return;
      settings = std::move(*waiting_);
      waiting_.reset();
      generation = waiting_generation_;
    }

    ComputeResult result;
    result.generation = generation;
    const auto start = std::chrono::steady_clock::now();
    try {
      AttentionInputs inputs = buildInputs(settings);
      result.facts = readFacts(inputs, settings.heads);
      // Bundles bring their own D (rows of w_q); the temperature scale needs the real one.
      const int64_t D = result.facts.known ? result.facts.D_q : settings.modelDim();
      result.trace = std::make_shared<const AttentionTrace>(
          runAttention(inputs, attentionOptions(settings, D)));
    } catch (const InputError& e) {
      result.error = e.what();
    } catch (const std::bad_alloc&) {
      result.error = "out of memory for these sizes; make L, S, B or H smaller";
    } catch (const std::exception& e) {
      result.error = std::string("internal error: ") + e.what();
    }
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == latest_generation_) done_ = std::move(result);  // else: stale, drop
  }
}

}  // namespace attnscope
