// The Generate control (issue 21): a model folder writes after its text, token by token,
// off the UI thread (jobs/generate_worker.h); the maps, grid, focus view and predictions
// show the sequence so far. Stop, or editing the text, halts it. The settings are never
// written back: the generated text stays in the Generate section, with a button that puts
// it into the text box. Ctrl+S on a shown generation writes it as an attention bundle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/settings.h"
#include "gui/jobs/generate_worker.h"
#include "gui/jobs/latest_job_worker.h"

namespace attnscope {

struct AppState;
struct KeyPress;

struct GenerateControls {
  int tokens = 20;
  bool greedy = true;
  float temperature = 1.0f, top_p = 1.0f;
  int top_k = 0, seed = 0;
  bool follow = true;  // the focus view keeps the newest row in its zoom window
  int recent_window = 8;  // W: the plots' and the head table's mass on the last W tokens
  // The KV cache's sinks + causal window (the stepper's sinks:K + causal-window:W; off: keep all).
  bool cache_on = false;
  int cache_window = 32, cache_sinks = 4;
  bool operator==(const GenerateControls& o) const {
    return tokens == o.tokens && greedy == o.greedy && temperature == o.temperature && top_p == o.top_p &&
           top_k == o.top_k && seed == o.seed && follow == o.follow && recent_window == o.recent_window &&
           cache_on == o.cache_on && cache_window == o.cache_window && cache_sinks == o.cache_sinks;
  }
  bool operator!=(const GenerateControls& o) const { return !(*this == o); }
};

// A bundle written by Ctrl+S (on its own thread: the maps can be large).
struct BundleWrite {
  std::string dir;
  std::shared_ptr<const GenerationSnapshot> generation;
};
struct BundleWritten {
  std::string dir, error;  // error: "" when written
};
using BundleWriter = LatestJobWorker<BundleWrite, BundleWritten>;

struct GenerateState {
  GenerateControls controls;
  std::unique_ptr<GenerateWorker> worker;   // made at the first Generate
  uint64_t job = 0;                         // the generation started last (0: none)
  bool running = false;
  bool shown = false;                       // the views show the generation
  std::string stopped_by;                   // "", "stop button", "text edited"
  Settings started_with;                    // the app's settings at the start
  std::shared_ptr<const GenerationSnapshot> snapshot;  // the newest of job
  std::unique_ptr<BundleWriter> writer;     // made at the first Ctrl+S on a generation
  std::string last_bundle, bundle_error;
};

void startGeneration(AppState& state);
void stopGeneration(AppState& state, const char* by);
// Before each frame (after the compute result): the newest snapshot, shown in the views;
// an edited text stops the generation.
void updateGeneration(AppState& state);
// The views show a generation (Ctrl+S writes it as a bundle).
bool generationShown(const AppState& state);
bool generationRunning(const AppState& state);
// Ctrl+S on a shown generation: a new folder generation-N in the export folder.
void requestGenerationBundle(AppState& state);
// Its key (a hook of the registry): Ctrl+S while a generation is shown writes it as a bundle
// (instead of the focused map's figure). True when it took the press.
bool generateKey(AppState& state, const KeyPress& press);
void finishGeneration(AppState& state);  // at shutdown: a bundle being written is finished
void drawGenerateSection(AppState& state);  // in the control panel, for model folders
// State-log key: generate {running, shown, job, max_tokens, greedy, window, seed, temperature,
// cache_on, cache_window, cache_sinks, weights_shared, steps, last (the newest step: id, token, rank, prob), prompt_tokens, stop, stopped_by, rows, text (up to 200 bytes), follow, bundle, bundle_writing, bundle_error, mass {layer, head, window, sink [steps], recent [steps], sink_range, recent_range ([lo, hi]: the plots' y-ranges)} of the focused head}.
void generateToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
