// The patching view (issue 37; the focus panel's "Patching" tab, a row of the registry):
// activation patching between the text box (the clean text) and a second, corrupt text of
// the same length, with the metric logit(answer) - logit(wrong) at the last position
// (model/patching.h). The answer and the wrong token are picked from the predictions or
// typed (one token of the vocabulary, else the pieces it became are named). The head table
// [layers x heads] and the layers x positions table of the residual stream show the
// normalised effect (patched - corrupt) / (clean - corrupt), computed in the background
// (jobs/patch_worker.h) with progress and Cancel while the tab is open; an edit of either text
// or token posts a new sweep, which supersedes the one running. The corrupt text and the
// tokens are settings (patch_corrupt, patch_answer, patch_wrong: saved and reopened); the
// tables export as PNG, CSV and HTML, their captions naming the model, the texts and tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gui/jobs/patch_worker.h"

namespace attnscope {

struct AppState;

// What a sweep was posted for: a change of any of these posts a new one.
struct PatchInputs {
  std::string model, clean, corrupt, answer, wrong;  // model: as the settings name it
  bool operator==(const PatchInputs& o) const {
    return model == o.model && clean == o.clean && corrupt == o.corrupt && answer == o.answer && wrong == o.wrong;
  }
  bool operator!=(const PatchInputs& o) const { return !(*this == o); }
};

struct PatchingState {
  std::unique_ptr<PatchWorker> worker;  // made when the tab first asks for a sweep
  uint64_t job = 0;                     // the sweep posted last (0: none)
  PatchInputs posted;
  bool running = false, cancelled = false;
  double logged_progress = 0.0;               // the running sweep's progress the state log last saw,
  std::chrono::steady_clock::time_point logged_at;  // and when
  std::shared_ptr<const PatchResult> result;  // of job (the newest finished)
};

// Before each frame: posts a sweep when the tab is open and its inputs changed, takes results.
void updatePatching(AppState& state);
bool patchingRunning(const AppState& state);
void cancelPatching(AppState& state);
void sweepAgain(AppState& state);  // after a Cancel, the same inputs once more
// The text box's last-position prediction `rank` becomes the answer (or the wrong token).
void pickPatchToken(AppState& state, size_t rank, bool answer);
// "12 of 12 tokens", or why the lengths do not allow a sweep ("" before the first result and
// while the corrupt text is empty).
std::string patchLengthLine(const PatchResult& result);
// Queues both tables as PNG, CSV and HTML (with a JSON of the sweep beside each).
void requestPatchingExport(AppState& state);
void drawPatchingPanel(AppState& state);
// State-log key: patching {corrupt, answer, wrong, job, running, progress, cancelled, picks [{label, id}], length,
// clean_tokens, corrupt_tokens, why_not, answer_id, wrong_id, layers, heads, range, sweep (the
// exports' JSON: model, clean, corrupt, their tokens, answer / wrong with id and piece,
// clean_metric, corrupt_metric, patch_heads [N][H], patch_resid [N][L] (raw metrics),
// patch_heads_normalised, patch_resid_normalised (null where clean = corrupt))}.
void patchingToJson(const AppState& state, nlohmann::json& line);

}  // namespace attnscope
