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
  std::string ablate;                  // an --ablate SPEC toggled on after the run: ablate_ms (median of 3)
  std::string sweep;                   // "zero" or "mean": the ablation sweep at the last position, sweep_ms
  bool json = false;
};

// JSON fields per size: model, L, load_ms, forward_ms, append_ms, (reruns, rerun_ms with
// --rerun), (generated, step_ms with --generate), (typed, typing_median_ms, typing_max_ms with
// --typing), (ablate, ablate_ms with --ablate), (sweep, sweep_ms with --sweep), peak_rss_mb.
int benchModel(const BenchModelFlags& flags);

}  // namespace attnscope
