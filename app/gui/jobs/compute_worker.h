// Runs configureRun + runAttention (or a trained model, config/model_source.h) and builds the view model (ranges, pooled texture
// copies) on a worker thread so the UI never blocks on maths.
// Only the newest job matters (a LatestJobWorker): a job posted while another runs replaces
// any waiting one, and results of superseded generations are dropped. A job with a teaching mistake
// also runs the correct pipeline on the same inputs, so the two can be compared. A job
// for the KV-cache stepper also decodes the sequence token by token (decodeWithKvCache).
// Maps too large for the full path (Run::tiled) are computed in tiles: the overview of every
// head, with progress and cancel; the view model then holds the overview (ViewSource::Tiled).
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/head_table.h"
#include "attention/attention.h"
#include "attention/kv_cache.h"
#include "config/model_source.h"
#include "config/run.h"
#include "config/settings.h"
#include "gui/jobs/latest_job_worker.h"
#include "model/folder_runner.h"
#include "view/view_model.h"

namespace attnscope {

// Sizes read off the inputs before the maths runs, so the pipeline panel can show which
// constraint (D_Q = D_K, L_K = L_V, D % H == 0) a failing job broke.
struct InputFacts {
  bool known = false;
  int64_t B = 0, L = 0, S_key = 0, S_value = 0, H = 0;
  int64_t D_q = 0, D_k = 0;  // projected sizes: rows of w_q and w_k
  bool qkv_bias = false;     // a trained model's q, k, v projections add a bias
  bool seeded_weights = false;  // a sandbox run's weights came from the seed (Run::seeded_weights)
  // A trained model's text, counted before the run (also when it is too long): its tokens,
  // the model's context and what a token is ("characters" or "bytes"). 0 = not a model run.
  int64_t text_tokens = 0, context = 0;
  const char* token_unit = "characters";
  bool text_more = false;  // the text has more than text_tokens (counted to 4 contexts)
  bool text_cut = false;   // the run read part of it (settings.model_truncate)
};

// Where a job's time went, in milliseconds (state log, --bench-typing): the engine (a model
// run from tokenizing to logits, or the attention run), building the view model from its
// result (maps, ranges, pooled copies, predictions, lens) and, measured after the maps are
// back (HeadTableResult), the head table's metrics.
struct JobStages {
  double engine_ms = 0.0, view_ms = 0.0, head_table_ms = 0.0;
};

struct ComputeResult {
  InputFacts facts;
  uint64_t generation = 0;
  std::shared_ptr<const ViewModel> view;        // what the views show (ranges, pooled copies); null on error
  std::string error;                            // InputError message, "" on success
  bool cancelled = false;                       // a tiled overview or a load was cancelled: no view, no error
  std::string load_cancelled;                   // the model folder whose load was cancelled ("" otherwise)
  std::string load_failed;                      // the model folder whose load failed (error says why; "" otherwise)
  Settings settings;                            // the job's settings (what view, when made, shows)
  bool tiled = false;                           // the maps were computed in tiles
  double milliseconds = 0.0;                    // configureRun + runAttention wall time
  JobStages stages;                             // ... stage by stage
  // Incremental recomputes (state log, tests): attention runs this worker has done so far,
  // whether this job reused the previous job's projections (only mask, fill, scale or the
  // score transforms changed) and took every raw score Q K^T from the workspace's cache.
  // Focus, zoom and view-only settings never post a job, so never run anything.
  int64_t runs = 0;
  bool projections_reused = false;
  bool raw_scores_reused = false;
  // Mistakes lab (settings.mistake != None): the same inputs run without the mistake.
  // Present even when the buggy run threw (e.g. kv-reshape-with-L with S != L).
  std::shared_ptr<const ViewModel> correct_view;
  // [B, H]: max over cells of |buggy - correct| shown probabilities (after dropout when
  // applied); empty unless both runs succeeded with the same shapes.
  Tensor prob_diff_max;
  // KV-cache stepper (posted with decode = true): the decoding, [L] max |decoded row - full
  // row| per step, or why the settings cannot be decoded (e.g. a mask that is not causal).
  std::shared_ptr<const KvCacheRun> decode;
  std::vector<float> decode_row_diff;
  std::string decode_error;
};

// The head table (metrics, groups) of the view a job made for the app to show (its view, or
// its correct_view when the buggy run threw), measured after the job's result is back: a
// keystroke's maps show without waiting for every head's statistics.
struct HeadTableResult {
  std::shared_ptr<const HeadTable> table;  // stamped with its view; null when it failed
  double milliseconds = 0.0;
};

// One compute job: the settings, whether the KV-cache stepper wants the decoding too, and
// which positions' logits a model run computes (the predictions panel's; the view computes
// the others when asked, ViewModel::more_predictions).
struct ComputeRequest {
  Settings settings;
  bool decode = false;
  LogitRows logit_rows;
  bool lens_on_demand = false;  // the Logit lens tab is open: past its budget, the lens column by column
};

class ComputeWorker {
 public:
  // on_result: called on the worker thread when a result is ready to poll.
  explicit ComputeWorker(std::function<void()> on_result = {});

  // Queues a job for these settings (decode: also run the KV-cache stepper); returns its
  // generation (1, 2, ...).
  // The head table still being measured stops: the maps come first (its view is about to be
  // replaced, and the new view's table follows its result).
  uint64_t post(const Settings& settings, bool decode = false, LogitRows logit_rows = {}, bool lens_on_demand = false) {
    tables_.cancel();
    return jobs_.post({settings, decode, std::move(logit_rows), lens_on_demand});
  }
  // The result of the newest job, once, when it has finished; stale results never appear.
  std::shared_ptr<const ComputeResult> poll() { return jobs_.poll(); }
  // While a tiled overview computes or a model folder loads: the fraction done in [0, 1]
  // (< 0 otherwise); loading() tells which.
  double progress() const { return jobs_.progress(); }
  bool loading() const { return loading_; }
  // The weights of the model folder the worker holds loaded (any thread; empty when none):
  // the generation runs on them instead of loading the folder again.
  FolderWeights loadedWeights() const {
    std::lock_guard<std::mutex> lock(weights_mutex_);
    return loaded_weights_;
  }
  // The head table of the newest job's view, once, when it has been measured (null otherwise);
  // whether one is still being measured.
  std::shared_ptr<const HeadTableResult> pollHeadTable() { return tables_.poll(); }
  bool headTablePending() const { return tables_.busy(); }
  // Stops the newest job if it is a tiled overview (at its next row block, or as soon as it
  // starts) or a model folder's load (at its next tensor); its result says cancelled.
  void cancel() { jobs_.cancel(); }

 private:
  using Jobs = LatestJobWorker<ComputeRequest, ComputeResult>;
  ComputeResult compute(const ComputeRequest& request, const Jobs::Job& job);
  // A trained model's run on the settings' text: the model is loaded once per folder (with
  // progress and cancel; null when cancelled) and its runner keeps its buffers from one
  // keystroke to the next.
  std::shared_ptr<const ViewModel> runModel(const ComputeRequest& request, ComputeResult& result, const Jobs::Job& job);
  void loadFolder(const std::string& folder, const Jobs::Job& job);
  // configureRun's run: the full path in workspace_, or the tiled overview.
  std::shared_ptr<const ViewModel> runCore(Run& run, ComputeResult& result, const Jobs::Job& job);
  // The overview of every head of a tiled run (with progress and cancel); null when
  // cancelled or superseded.
  std::shared_ptr<const ViewModel> runTiled(Run& run, const Jobs::Job& job);
  // The mistakes lab's correct run, the head table, the KV-cache stepper's decoding.
  void addCorrectRun(const Settings& settings, const Run& run, ComputeResult& result, const Jobs::Job& job);
  void postHeadTable(const ComputeResult& result, const Jobs::Job& job);
  void addDecoding(const Settings& settings, const Run* run, ComputeResult& result, const Jobs::Job& job);

  // worker thread only:
  std::unique_ptr<FolderModelRunner> model_runner_;  // the model folder last run (either kind)
  AttentionWorkspace workspace_;      // buffers and projections reused
  TiledWorkspace tiled_workspace_;    // a tiled run's Q and K reused
  int64_t runs_ = 0;                  // workspace_.run calls
  std::atomic<bool> loading_{false};  // a model folder's weights are being converted
  mutable std::mutex weights_mutex_;
  FolderWeights loaded_weights_;      // model_runner_'s weights, for loadedWeights()
  using Tables = LatestJobWorker<std::shared_ptr<const ViewModel>, HeadTableResult>;
  Tables tables_;                     // the head tables, after each job's result (their thread first: jobs_ posts to it)
  Jobs jobs_;                         // last member: its thread starts after the others exist
};

}  // namespace attnscope
