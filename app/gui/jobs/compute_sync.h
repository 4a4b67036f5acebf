// Between the UI thread and the compute worker: post a job when a compute-relevant
// setting changed (never per frame), take the newest result when it is ready.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/kv_cache.h"
#include "config/settings.h"
#include "gui/jobs/compute_worker.h"

namespace attnscope {

struct ComputeState {
  std::unique_ptr<ComputeWorker> worker;
  // the job posted last
  Settings posted_settings;
  uint64_t posted_generation = 0;  // 0 = nothing posted yet
  std::chrono::steady_clock::time_point posted_at;
  bool posted_decode = false;      // the KV-cache stepper asked for the decoding
  bool posted_lens = false;        // the Logit lens tab asked for the lens column by column
  bool busy = false;               // a recompute has run > ~100 ms: spinner shown
  double progress = -1.0;          // a tiled overview or a load in progress: fraction done (whole percents); < 0 otherwise
  bool loading = false;            // ... and it is a model folder's load
  bool cancelled = false;          // the latest job was cancelled: the maps shown are older (until the next post)
  std::string load_cancelled;      // the folder whose load was cancelled last ("" until one is; cleared by the next post)
  // A folder whose weights failed to load while another model was shown: that model stays
  // (settings, maps, recent list) and the error is shown in the Open dialog.
  std::string load_failed;         // the folder ("" until one fails; cleared by the next post)
  std::string load_error;          // its one-line error (kept)
  uint64_t load_failures = 0;      // counts those that kept a shown model (the Open dialog shows each once)
  Settings shown_settings;         // the settings of the job that made view (a cancelled load returns to them)
  // The latest result, as the worker made it (null before the first): error, incremental
  // reuse, the mistakes lab's correct run, the stepper's decoding. Read through the accessors.
  std::shared_ptr<const ComputeResult> latest;
  // What every view reads: the latest successful result's view, or that view extended with
  // rollout / flow (layer_maps). Kept when a later job fails or is cancelled.
  std::shared_ptr<const ViewModel> view;
  double compute_ms = 0.0;         // the wall time of the job that made view
  JobStages stages;                // ... stage by stage
  // From an edit to the maps on screen: each frame starts at frame_started (its input is
  // read then); a post remembers the frame it came from until its result is drawn.
  std::chrono::steady_clock::time_point frame_started;
  std::vector<std::pair<uint64_t, std::chrono::steady_clock::time_point>> posted_edits;  // generation, edit time
  std::optional<std::chrono::steady_clock::time_point> shown_edit;  // the new view's edit, until its frame is drawn
  double upload_ms = 0.0;          // the new view's textures, uploaded in its first frame
  double edit_to_maps_ms = 0.0;    // the last view drawn: its edit to the end of its first frame
  uint64_t maps_generation = 0;    // the job whose maps were drawn last
  InputFacts facts;                // sizes of the latest job's inputs (a cancelled job's were never shown)
  std::shared_ptr<const HeadTable> head_table;  // metrics and groups of the shown view; may be stale or null

  uint64_t traceGeneration() const { return latest ? latest->generation : 0; }
  const std::string& error() const { return result().error; }  // InputError of the latest job ("" = ok)
  int64_t runs() const { return result().runs; }  // attention runs the worker has done (incremental checks)
  bool projectionsReused() const { return result().projections_reused; }  // the latest job reused the previous projections
  bool rawScoresReused() const { return result().raw_scores_reused; }     // ... and took every raw score Q K^T from the cache
  // Mistakes lab: the latest job's settings run without the mistake (null when no mistake
  // or when the inputs themselves failed); shown even when the buggy run threw.
  const std::shared_ptr<const ViewModel>& correctView() const { return result().correct_view; }
  const Tensor& probDiffMax() const { return result().prob_diff_max; }  // [B, H] max |buggy - correct|; empty = n/a
  // KV-cache stepper: jobs decode too while the stepper is open (posted_decode).
  const std::shared_ptr<const KvCacheRun>& decode() const { return result().decode; }  // null when not asked for or not decodable
  const std::vector<float>& decodeRowDiff() const { return result().decode_row_diff; }  // [L] max |decoded row - full row| per step
  const std::string& decodeError() const { return result().decode_error; }              // why the settings cannot be decoded

  // A job or the head table of its view is still being computed.
  bool pending() const {
    return posted_generation > traceGeneration() || (worker && worker->headTablePending());
  }
  // The core's trace behind the view (pipeline, mask components, tooltips); null for
  // imported maps.
  const AttentionTrace* trace() const { return view ? view->trace.get() : nullptr; }
  const AttentionTrace* correctTrace() const { return correctView() ? correctView()->trace.get() : nullptr; }
  // Maps computed elsewhere: no model to recompute (mask, scale, heads are fixed).
  bool imported() const { return view && view->source == ViewSource::Imported; }
  // The maps on screen are an older result: the latest recompute failed (error says why).
  // Not in the mistakes lab's case of a buggy run that threw: its correct run is shown.
  bool mapsStale() const { return (!error().empty() || cancelled) && view && !correctView(); }
  // The latest job failed because a trained model's text is longer than its context: the
  // message is shown once, under the text box; the maps only say they are out of date.
  bool textTooLong() const { return !error().empty() && facts.context > 0 && facts.text_tokens > facts.context; }

 private:
  const ComputeResult& result() const;  // latest, or an empty result before the first
};

// What a job asks for beyond the settings, from the features that want it (the shell's
// computeAsk): the stepper's decoding, the lens past its budget, the rows to unembed.
struct ComputeAsk {
  bool decode = false;
  bool lens = false;
  LogitRows logit_rows;
  bool hold = false;  // a draft blocks the run (postIfSettingsChanged posts nothing)
};

// These return what changed; the shell applies it (a state-log line, saving the settings,
// the views clamped to a new result). None reads more of the app than it is given.

// What receiveResult did.
struct Received {
  bool taken = false;             // a new result: the shell clamps the views to it
  bool settings_returned = false;  // a cancelled or failed load put the shown model back into `settings`
  std::string ran_folder;          // a model folder that ran: the Models list remembers it
  bool table = false;              // the head table of a view came (a state-log line)
};
// Takes the worker's newest result, if any.
Received receiveResult(ComputeState& c, Settings& settings);
// Posts the settings when they differ from the last posted job's (or nothing was posted);
// true when it posted.
bool postIfSettingsChanged(ComputeState& c, const Settings& settings, const ComputeAsk& ask);
// The frame begins: its input is the edit a post of this frame answers.
inline void startFrame(ComputeState& c) { c.frame_started = std::chrono::steady_clock::now(); }
// The frame that first showed a new view was drawn: edit_to_maps_ms; true when it was that frame.
bool noteMapsDrawn(ComputeState& c);
// Shows the spinner once a recompute has run for ~100 ms; follows a tiled overview's progress.
// True when either changed.
bool updateBusy(ComputeState& c);
// Stops a tiled overview in progress (Cancel button, Escape); the maps shown stay, marked stale.
// Stops a model folder's load the same way; the settings then return to the shown model's
// (as they do when a load fails, receiveResult).
// True when something was cancelled.
bool cancelCompute(ComputeState& c);
// Posts the settings again, changed or not (after a cancel).
void recomputeNow(ComputeState& c, const Settings& settings, const ComputeAsk& ask);

// State-log keys: generation, pending, error, maps_stale, busy, progress, loading, cancelled, load_cancelled, load_failed, load_error, compute_runs, projections_reused, raw_scores_reused, compute_ms, edit_to_maps_ms, maps_generation, stages; the shown result's sizes, variants and mask components.
void computeToJson(const ComputeState& c, nlohmann::json& line);

}  // namespace attnscope
