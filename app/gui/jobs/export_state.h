// Export state (issue 4): the queue of jobs, the one running on the export worker (a
// LatestJobWorker with the queue policy: every job, in order), and the toast that reports it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "figure/figure.h"
#include "gui/jobs/latest_job_worker.h"
#include "view/map_kinds.h"
#include "view/zoom.h"

namespace attnscope {


// One export the user asked for: a figure of the selected view, the head grid, or the
// window as it was on screen (pixels read right after that frame was rendered).
struct ExportJob {
  std::string kind;                // "probs", "scores", "mask", "rollout", "flow", "grid", "html",
                                   // "difference", "query_focus", "patch_heads", "patch_resid"
                                   // or "screenshot"
  std::optional<RgbImage> window;  // screenshot pixels [height, width]
  CellWindow zoom;                 // probs/scores: the focus view's zoomed window (whole() = all)
  bool full_resolution = false;    // grid: every cell, not capped at kMaxAtlasSide px
  // "difference" (the compare view's A - B) and "query_focus" (its bars): what the view
  // shows, copied when asked, written as base_name.{png,npy,json} / base_name.json.
  std::optional<Figure> figure;
  std::vector<std::string> formats = {"png", "npy"};  // the figure's (the patching tables: png, csv, html)
  std::string base_name, json;
};

struct ExportOutcome {
  std::string kind;
  std::vector<std::string> paths;  // files written (figures, then the settings JSON)
  std::string error;               // one line; "" on success (then no file was left behind)
};

// What the export thread runs: the job with its own copy of the settings and the focus, and
// the immutable view model it draws.
struct ExportRun {
  ExportJob job;
  Settings settings;
  ViewFocus focus;
  std::shared_ptr<const ViewModel> view;
};
using ExportWorker = LatestJobWorker<ExportRun, ExportOutcome>;

// A message in the bottom-right corner for a few seconds.
struct Toast {
  std::string text;
  bool error = false;
  std::chrono::steady_clock::time_point until;
};

struct ExportState {
  std::deque<ExportJob> queue;              // waiting (figures wait for a current trace)
  std::unique_ptr<ExportWorker> worker;     // started on first use
  std::string running_kind;
  std::chrono::steady_clock::time_point started;
  std::optional<ExportOutcome> last;
  int64_t count = 0;                        // finished exports (ok or failed)
  bool screenshot_requested = false;        // read the window after this frame renders
  bool full_resolution_atlas = false;       // the Export section's checkbox (this session only)
  std::optional<Toast> toast;
  bool log_pending = false;                 // its state-log keys changed (the shell writes a line)
  bool running() const { return worker && worker->busy(); }  // a job runs or waits to be taken
};

}  // namespace attnscope
