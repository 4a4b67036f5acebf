// The app's Generate control runs here, off the UI thread: a LatestJobWorker whose one job
// generates token after token through the model folder's runner (its KV cache: each token
// computes one new row per layer, model/generate.h) and publishes, after every run, a
// snapshot of the sequence so far (the core's view model, its head table, the steps). A new
// job or Stop (cancel) ends the running one at its next step. The generation runs on the
// weights the maps' worker already loaded (GenerateRequest::weights: shared, never copied;
// its runner is dropped when the job ends, so a model switch frees them); only without them
// does it load the folder itself, and keeps that runner for the next generation on it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/generation_mass.h"
#include "analysis/head_table.h"
#include "config/model_source.h"
#include "gui/jobs/latest_job_worker.h"
#include "model/folder_runner.h"
#include "model/generate.h"
#include "view/view_model.h"

namespace attnscope {

struct GenerateRequest {
  std::string folder;  // a model folder of either kind
  std::string text;    // the prompt
  Truncate truncate = Truncate::None;  // a prompt past the context: its first / last tokens, room left for `tokens`
  int64_t tokens = 0;  // how many to generate (at most)
  SamplingSettings sampling;
  int64_t recent_window = kDefaultRecentWindow;  // W of the mass on the last W tokens
  CacheWindow cache;                              // sinks + causal window of the KV cache (off: keep all)
  FolderWeights weights;                          // the folder's weights when already loaded (else loaded here)
  bool lens = false;  // the Logit lens tab is open: each step's view has its new positions' lens columns
  Interventions interventions;  // the maps' (settings model_ablate / model_knockout): Generate follows them
};

// The sequence so far: made once on the worker, read by the UI.
struct GenerationSnapshot {
  uint64_t job = 0;                               // the job that made it
  std::shared_ptr<const ViewModel> view;          // prompt + generated tokens so far (first_generated set)
  std::shared_ptr<const HeadTable> head_table;    // of view (with the gen_* columns)
  std::shared_ptr<const GenerationMass> mass;     // per head: sink and last-W mass per step
  ModelTokens tokens;                             // the sequence so far
  std::vector<GenerationStep> steps;              // one per generated token
  int64_t prompt_length = 0;
  std::string prompt_text, generated_text;        // as typed
  std::string stop;                               // "" while running; "tokens", "eos", "context", "stopped"
  std::string error;                              // InputError message (no view)
  bool shared_weights = false;                    // ran on the request's weights (no load, no copy)
};

class GenerateWorker {
 public:
  GenerateWorker();
  uint64_t start(GenerateRequest request) { return jobs_.post(std::move(request)); }
  void stop() { jobs_.cancel(); }
  // The newest snapshot of any job since the last call (the final one last); null when none.
  std::shared_ptr<const GenerationSnapshot> take();

 private:
  using Jobs = LatestJobWorker<GenerateRequest, GenerationSnapshot>;
  GenerationSnapshot run(const GenerateRequest& request, const Jobs::Job& job);
  void publish(GenerationSnapshot snapshot);

  // The runner of this job (worker thread only, jobs/job_runner.h): on the request's weights, or
  // on weights loaded here (then kept for the next job on the same folder).
  std::unique_ptr<FolderModelRunner> runner_;
  std::mutex mutex_;
  std::shared_ptr<const GenerationSnapshot> published_;
  Jobs jobs_;  // last member: its thread starts after the others exist
};

}  // namespace attnscope
