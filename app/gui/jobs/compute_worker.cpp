#include "gui/jobs/compute_worker.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "config/attention_bundle.h"
#include "config/model_source.h"
#include "config/run.h"

namespace attnscope {
namespace {

constexpr int kWorkerNice = 10;  // 0 is the UI's; 10 gives it about 10x the CPU share under contention

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

// [B, H] max over [L, S] of |buggy - correct|; empty when the runs' shapes differ.
Tensor probDifferenceMax(const AttentionTrace& buggy, const AttentionTrace& correct) {
  const Tensor& a = buggy.probsAfterDropout();
  const Tensor& b = correct.probsAfterDropout();
  if (a.shape != b.shape || a.shape.size() != 4) return Tensor();
  const Tensor diff = absDifference(a, b);  // [B, H, L, S]
  Tensor result({a.dim(0), a.dim(1)});
  const int64_t cells = a.dim(2) * a.dim(3);
  for (size_t bh = 0; bh < result.data.size(); ++bh) {
    const float* first = diff.data.data() + bh * cells;
    result.data[bh] = cells > 0 ? *std::max_element(first, first + cells) : 0.0f;
  }
  return result;
}

// What the workspace's raw score cache may take: the full path's budget less the trace's
// estimate, so that the trace and the cache together stay within it.
uint64_t rawCacheBytes(const AttentionInputs& in, const AttentionOptions& options) {
  if (!readFacts(in, options.heads).known) return 0;  // shapes the run will refuse
  const uint64_t trace = estimateTraceBytes(in.query.dim(0), in.query.dim(1), in.key.dim(1), in.w_q.dim(0),
                                            in.query.dim(2), in.key.dim(2), in.value.dim(2), options.heads);
  return trace < fullPathBudgetBytes() ? fullPathBudgetBytes() - trace : 0;
}

// Runs `work`; returns "" or the one-line message for what it threw. Out of memory names
// the bundle the sizes came from.
template <typename Work>
std::string describeFailure(const Settings& settings, Work&& work) {
  try {
    work();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    const std::string subject = settings.source == InputSource::Bundle ? "bundle " + settings.bundle_path + ": " : "";
    return subject + "out of memory for these sizes; make L, S, B or H smaller";
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  }
  return "";
}

}  // namespace

ComputeWorker::ComputeWorker() : thread_([this] { run(); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cancelled_generation_ = UINT64_MAX;  // a tiled overview in progress stops at its next row block
  wake_.notify_all();
  thread_.join();
}

uint64_t ComputeWorker::post(const Settings& settings, bool decode) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++latest_generation_;
    waiting_ = settings;
    waiting_decode_ = decode;
    waiting_generation_ = generation;
  }
  wake_.notify_one();
  return generation;
}

void ComputeWorker::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_generation_ = latest_generation_;
}

bool ComputeWorker::superseded(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation != latest_generation_;
}

std::shared_ptr<const ViewModel> ComputeWorker::runModel(const Settings& settings, InputFacts& facts) {
  const std::string folder = modelFolder(settings);
  if (!model_runner_ || folder != model_folder_) {
    model_runner_.reset();
    model_runner_ = std::make_unique<ModelRunner>(std::make_shared<const Model>(loadModel(folder)));
    model_folder_ = folder;
  }
  const ModelConfig& c = model_runner_->model().config;
  ModelTokens tokens = tokenizeForModel(model_runner_->model(), settings.model_text);
  facts.text_tokens = static_cast<int64_t>(tokens.ids.size());
  facts.context = c.max_len;
  facts.token_unit = c.tokenizer == Tokenizer::Chars ? "characters" : "bytes";
  auto view = std::make_shared<const ViewModel>(
      viewFromModelRun(model_runner_->model(), model_runner_->runTokens(std::move(tokens))));
  facts.known = true;
  facts.B = 1;
  facts.L = facts.S_key = facts.S_value = view->L;
  facts.H = c.n_heads;
  facts.D_q = facts.D_k = c.d_model;
  return view;
}

std::shared_ptr<const ViewModel> ComputeWorker::runTiled(Run& run, uint64_t generation) {
  workspace_ = AttentionWorkspace();  // the full path's buffers would count against the tiles' memory
  progress_ = 0.0;
  std::shared_ptr<const ViewModel> view = buildTiledView(
      run,
      [&](double fraction) {
        progress_ = fraction;
        const uint64_t cancelled = cancelled_generation_;
        return cancelled != generation && cancelled != UINT64_MAX && !superseded(generation);
      },
      &tiled_workspace_);
  progress_ = -1.0;
  return view;
}

std::optional<ComputeResult> ComputeWorker::poll() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<ComputeResult> result;
  result.swap(done_);
  return result;
}

void ComputeWorker::run() {
  // The UI thread (and Mesa's render threads) come first on a busy machine: a slider drag
  // keeps this thread and the OpenMP/OpenBLAS threads it starts (they inherit the nice
  // value) computing back to back, which otherwise takes the cores a frame needs.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kWorkerNice);
  for (;;) {
    Settings settings;
    uint64_t generation;
    bool decode = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || waiting_.has_value(); });
      if (stop_) return;
      settings = std::move(*waiting_);
      decode = waiting_decode_;
      waiting_.reset();
      generation = waiting_generation_;
    }

    ComputeResult result;
    result.generation = generation;
    const auto start = std::chrono::steady_clock::now();
    std::optional<Run> run;
    result.error = describeFailure(settings, [&] {
      // Maps computed elsewhere (an attention bundle): nothing to run, only to show.
      if (settings.source == InputSource::Bundle && !settings.bundle_path.empty() &&
          bundleKind(settings.bundle_path) == BundleKind::Attentions) {
        result.view = std::make_shared<const ViewModel>(viewFromImported(loadAttentionBundle(settings.bundle_path)));
        return;
      }
      if (settings.source == InputSource::Model) {
        result.view = runModel(settings, result.facts);
        return;
      }
      run = configureRun(settings);  // the one way settings become a run (as compute/export)
      if (run->tiled) {
        result.facts = readFacts(run->inputs, settings.heads);
        result.tiled = true;
        result.view = runTiled(*run, generation);
        result.cancelled = !result.view;
        result.projections_reused = tiled_workspace_.projectionsReused();
        return;
      }
      tiled_workspace_ = TiledWorkspace();   // its Q and K would count against the full path's memory
      run->options.keep_raw_scores = false;  // the tooltip derives them (rawScore)
      result.facts = readFacts(run->inputs, settings.heads);
      result.view = std::make_shared<const ViewModel>(
          viewFromTrace(workspace_.run(run->inputs, run->options, true, rawCacheBytes(run->inputs, run->options))));
      ++runs_;
      result.projections_reused = workspace_.projectionsReused();
      result.raw_scores_reused = workspace_.rawScoresReused();
    });
    // The correct run for the mistakes lab, unless the inputs themselves failed or a
    // newer job already supersedes this one. Its own failure only loses the comparison.
    if (run && !run->tiled && run->options.mistake != Mistake::None && !superseded(generation)) {
      AttentionOptions options = run->options;
      options.mistake = Mistake::None;
      describeFailure(settings, [&] {
        result.correct_view = std::make_shared<const ViewModel>(
            viewFromTrace(workspace_.run(run->inputs, options, true, rawCacheBytes(run->inputs, options))));
        ++runs_;
        if (result.view) result.prob_diff_max = probDifferenceMax(*result.view->trace, *result.correct_view->trace);
      });
    }
    // The head table of the shown view, measured with it (never on the UI thread). A tiled
    // view's numbers were measured on the real maps in the overview's pass.
    if (const ViewModel* shown = result.view ? result.view.get() : result.correct_view.get();
        shown && !superseded(generation)) {
      describeFailure(settings, [&] { result.head_table = std::make_shared<const HeadTable>(headTableOf(*shown)); });
    }
    // The KV-cache stepper: the same run decoded one token at a time. A model run's layers
    // feed each other through the model's own runtime, which has no cache to step through.
    if (decode && settings.source == InputSource::Model && result.view) {
      result.decode_error = "the stepper decodes the attention core's run (text, synthetic or bundle source); "
                            "a model run is not decoded step by step";
    }
    if (decode && run && !run->tiled && result.view && !superseded(generation)) {
      result.decode_error = describeFailure(settings, [&] {
        auto decoded = std::make_shared<const KvCacheRun>(decodeWithKvCache(run->inputs, run->options));
        result.decode_row_diff = stepRowDifference(*decoded, *result.view->trace);
        result.decode = std::move(decoded);
      });
    }
    progress_ = -1.0;  // also when the tiled run threw
    result.runs = runs_;
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == latest_generation_) done_ = std::move(result);  // else: stale, drop
  }
}

}  // namespace attnscope
