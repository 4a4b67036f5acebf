// `attnscope bench --model FOLDER`: times a model folder's runtime (docs/performance.md, "attnscope bench").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attnscope {

struct BenchModelFlags {
  std::string model;
  std::string tokens = "128,512,1024";  // sequence lengths L
  std::optional<int64_t> generate;     // N greedy tokens per size: step_ms
  std::optional<int64_t> typing;       // N tokens appended one by one after L: typed, typing_median_ms, typing_max_ms
  std::optional<int64_t> rerun;        // N more full forwards on other texts of length L: reruns, rerun_ms
  std::string logits = "last";         // the forward's and append's unembedding: the last position (the app's) or all
  std::string ablate;                  // --ablate SPEC: toggled on after a run on L (ablate_ms, ablate_vs_append)
  bool patch = false;                  // --patch: the full patching sweep on L (patch_ms, patched_runs, patch_run_ms)
  std::string sweep;                   // --sweep zero|mean: the ablation sweep at the last position (sweep_ms)
  bool json = false;
};

// JSON fields per size: model, L, load_ms, forward_ms, append_ms, (reruns, rerun_ms with
// --rerun), (generated, step_ms with --generate), (typed, typing_median_ms, typing_max_ms with
// --typing), (ablate, ablate_ms, ablate_vs_append with --ablate), (patched_runs, patch_ms,
// patch_run_ms with --patch), (sweep, sweep_ms with --sweep), peak_rss_mb.
int benchModel(const BenchModelFlags& flags);

}  // namespace attnscope
