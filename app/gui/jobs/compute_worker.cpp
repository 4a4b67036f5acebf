#include "gui/jobs/compute_worker.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>

#include "attention/tiles.h"
#include "config/model_source.h"
#include "config/run.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Test hook (GUI tests of a long load's progress and Cancel): milliseconds to wait after
// each tensor of a model folder is converted. Unset or 0 in normal use.
constexpr const char* kLoadDelayVariable = "ATTNSCOPE_TEST_LOAD_DELAY_MS";
std::chrono::milliseconds loadDelay() {
  return std::chrono::milliseconds(bytesFromEnvironment(kLoadDelayVariable).value_or(0));
}

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

// The head table of a view (off the UI thread); a table that fails is left out, and so is one
// stopped for a newer edit (ComputeWorker::post: its view is about to be replaced).
HeadTableResult measureHeadTable(const std::shared_ptr<const ViewModel>& view, const std::function<bool()>& keep_going) {
  HeadTableResult result;
  const auto started = std::chrono::steady_clock::now();
  try {
    result.table = std::make_shared<const HeadTable>(headTableOf(*view, 0.5, kDefaultRecentWindow, keep_going));
  } catch (const std::exception&) {  // none: the metrics panel says so
  }
  result.milliseconds = millisecondsSince(started);
  return result;
}

}  // namespace

// The UI thread (and Mesa's render threads) come first on a busy machine: a slider drag
// keeps the worker thread and the OpenMP/OpenBLAS threads it starts (they inherit the nice
// value) computing back to back, which otherwise takes the cores a frame needs.
ComputeWorker::ComputeWorker(std::function<void()> on_result)
    : tables_([](std::shared_ptr<const ViewModel>& view, const Tables::Job& job) {
                return measureHeadTable(view, [&job] { return job.keepGoing(); });
              },
              JobOptions{JobPolicy::Latest, kWorkerNice, -1.0}),
      jobs_([this](ComputeRequest& request, const Jobs::Job& job) { return compute(request, job); },
            JobOptions{JobPolicy::Latest, kWorkerNice, -1.0}) {
  tables_.notifyOnResult(on_result);
  jobs_.notifyOnResult(std::move(on_result));
}

// Loads a model folder with progress; Cancelled when the job is cancelled or superseded.
void ComputeWorker::loadFolder(const std::string& folder, const Jobs::Job& job) {
  {
    std::lock_guard<std::mutex> lock(weights_mutex_);
    loaded_weights_ = FolderWeights();
  }
  model_runner_.reset();  // the old model's weights go before the new one's load (unless a generation still runs on them)
  const std::chrono::milliseconds delay = loadDelay();
  loading_ = true;
  struct Done {
    const Jobs::Job& job;
    std::atomic<bool>& loading;
    ~Done() {
      job.progress(-1.0);
      loading = false;
    }
  } done{job, loading_};
  model_runner_ = std::make_unique<FolderModelRunner>(folder, [&](double fraction) {
    job.progress(fraction);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    return job.keepGoing();
  });
  std::lock_guard<std::mutex> lock(weights_mutex_);
  loaded_weights_ = model_runner_->weights();
}

std::shared_ptr<const ViewModel> ComputeWorker::runModel(const ComputeRequest& request, ComputeResult& result,
                                                         const Jobs::Job& job) {
  const Settings& settings = request.settings;
  InputFacts& facts = result.facts;
  const std::string folder = modelFolder(settings);
  if (!model_runner_ || folder != model_runner_->folder()) {
    try {
      loadFolder(folder, job);
    } catch (const Cancelled&) {
      result.cancelled = true;
      result.load_cancelled = folder;
      return nullptr;
    } catch (...) {  // bad weights, out of memory: the message is describeFailure's
      result.load_failed = folder;
      throw;
    }
  }
  // The text's size against the context reaches the app even when the run refuses the text.
  FolderModelRunner::TextSize size;
  const auto note_size = [&] {
    facts.text_tokens = size.tokens;
    facts.context = size.context;
    facts.token_unit = size.unit;
    facts.text_more = size.more;
    facts.text_cut = size.cut;
  };
  std::shared_ptr<const ViewModel> view;
  // Past the full path's budget every layer's overview is pooled: progress and Cancel as a
  // synthetic tiled run's.
  const Progress overview_progress = [&](double fraction) {
    job.progress(fraction);
    return job.keepGoing();
  };
  try {
    const auto started = std::chrono::steady_clock::now();
    // The settings' interventions (model_ablate, model_knockout): a change reruns from the layer it touches.
    model_runner_->setInterventions(parseInterventions(settings.model_ablate, settings.model_knockout));
    view = std::make_shared<const ViewModel>(
        model_runner_->view(settings.model_text, &size, request.logit_rows, overview_progress, request.lens_on_demand,
                            settings.model_truncate));
    result.stages.engine_ms = model_runner_->lastRunMs();
    result.stages.view_ms = millisecondsSince(started) - result.stages.engine_ms;
    job.progress(-1.0);
  } catch (const Cancelled&) {
    note_size();
    result.cancelled = true;
    return nullptr;
  } catch (const InputError&) {
    note_size();
    throw;
  }
  note_size();
  result.tiled = view->tiled != nullptr;  // past the full path's budget: every layer in tiles
  facts.known = true;
  facts.B = 1;
  facts.L = facts.S_key = facts.S_value = view->mapL();
  const FolderModelRunner::AttentionShape& shape = model_runner_->attentionShape();
  facts.H = shape.heads;
  facts.D_q = shape.heads * shape.head_dim;
  facts.D_k = shape.kv_heads * shape.head_dim;
  facts.qkv_bias = shape.qkv_bias;
  return view;
}

std::shared_ptr<const ViewModel> ComputeWorker::runTiled(Run& run, const Jobs::Job& job) {
  workspace_ = AttentionWorkspace();  // the full path's buffers would count against the tiles' memory
  job.progress(0.0);
  std::shared_ptr<const ViewModel> view = buildTiledView(
      run,
      [&](double fraction) {
        job.progress(fraction);
        return job.keepGoing();
      },
      &tiled_workspace_);
  job.progress(-1.0);
  return view;
}

std::shared_ptr<const ViewModel> ComputeWorker::runCore(Run& run, ComputeResult& result, const Jobs::Job& job) {
  result.facts = readFacts(run.inputs, run.options.heads);
  result.facts.seeded_weights = run.seeded_weights;
  if (run.tiled) {
    result.tiled = true;
    std::shared_ptr<const ViewModel> view = runTiled(run, job);
    result.cancelled = !view;
    result.projections_reused = tiled_workspace_.projectionsReused();
    return view;
  }
  tiled_workspace_ = TiledWorkspace();  // its Q and K would count against the full path's memory
  run.options.keep_raw_scores = false;  // the tooltip derives them (rawScore)
  const auto started = std::chrono::steady_clock::now();
  std::shared_ptr<const AttentionTrace> trace =
      workspace_.run(run.inputs, run.options, true, rawCacheBytes(run.inputs, run.options));
  result.stages.engine_ms = millisecondsSince(started);
  auto view = std::make_shared<const ViewModel>(viewFromTrace(std::move(trace)));
  result.stages.view_ms = millisecondsSince(started) - result.stages.engine_ms;
  ++runs_;
  result.projections_reused = workspace_.projectionsReused();
  result.raw_scores_reused = workspace_.rawScoresReused();
  return view;
}

// The correct run for the mistakes lab, unless the inputs themselves failed or a newer job
// already supersedes this one. Its own failure only loses the comparison.
void ComputeWorker::addCorrectRun(const Settings& settings, const Run& run, ComputeResult& result,
                                  const Jobs::Job& job) {
  if (run.tiled || run.options.mistake == Mistake::None || job.superseded()) return;
  AttentionOptions options = run.options;
  options.mistake = Mistake::None;
  describeFailure(settings, [&] {
    result.correct_view = std::make_shared<const ViewModel>(
        viewFromTrace(workspace_.run(run.inputs, options, true, rawCacheBytes(run.inputs, options))));
    ++runs_;
    if (result.view) result.prob_diff_max = probDifferenceMax(*result.view->trace, *result.correct_view->trace);
  });
}

// The head table of the view the app will show, measured on its own worker once the job's
// result is back. A tiled view's numbers were measured on the real maps in the overview's pass.
void ComputeWorker::postHeadTable(const ComputeResult& result, const Jobs::Job& job) {
  std::shared_ptr<const ViewModel> shown = result.view ? result.view : result.correct_view;
  if (shown && !job.superseded()) tables_.post(std::move(shown));
}

// The KV-cache stepper: the same run decoded one token at a time. A model run is not decoded
// here: the stepper shows its runner's cache (analysis/cache_footprint.h).
void ComputeWorker::addDecoding(const Settings& settings, const Run* run, ComputeResult& result,
                                const Jobs::Job& job) {
  if (!run || run->tiled || !result.view || job.superseded()) return;
  result.decode_error = describeFailure(settings, [&] {
    auto decoded = std::make_shared<const KvCacheRun>(decodeWithKvCache(run->inputs, run->options));
    result.decode_row_diff = stepRowDifference(*decoded, *result.view->trace);
    result.decode = std::move(decoded);
  });
}

ComputeResult ComputeWorker::compute(const ComputeRequest& request, const Jobs::Job& job) {
  const Settings& settings = request.settings;
  ComputeResult result;
  result.generation = job.generation();
  result.settings = settings;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Run> run;  // kept for the correct run and the decoding, also when the run threw
  ViewRunners runners;
  runners.model = [&](const Settings&) { return runModel(request, result, job); };  // buildView passes request.settings
  runners.core = [&](Run configured) {
    run = std::move(configured);
    return runCore(*run, result, job);
  };
  result.error = describeFailure(settings, [&] { result.view = buildView(settings, runners); });
  if (run) addCorrectRun(settings, *run, result, job);
  if (request.decode) addDecoding(settings, run ? &*run : nullptr, result, job);
  result.runs = runs_;
  result.milliseconds = millisecondsSince(start);
  postHeadTable(result, job);
  return result;
}

}  // namespace attnscope
