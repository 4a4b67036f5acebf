// --bench-typing N: the app types as a user would and times each edit to the first frame
// showing its maps (ComputeState::edit_to_maps_ms) beside the engine's part of the same job,
// then prints one JSON line on stdout and quits. Three phases on the model text of the
// settings: N characters typed at its end, N edits at its start (the first character
// replaced), and 3 pastes of the whole text into the emptied box (its first character
// changed each time, so that no row of the last run can be reused).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gui/jobs/compute_worker.h"

namespace attnscope {

struct AppState;

struct TypingBench {
  enum class Phase { Settle, End, Start, Paste, Done };
  struct Sample {
    double edit_to_maps_ms = 0.0, upload_ms = 0.0;
    JobStages stages;
  };
  int edits = 0;                  // N (0: no bench)
  Phase phase = Phase::Settle;
  int done_in_phase = 0;          // edits measured in this phase
  bool edit_made = false;         // an edit waits for the frame that posts it
  uint64_t waiting_for = 0;       // the job posted for the last edit
  uint64_t posted_before = 0;     // posted_generation when the edit was made
  std::chrono::steady_clock::time_point edited;  // when it was made (a run that never ends fails)
  bool emptied = false;           // paste phase: the box was emptied, the paste comes next
  std::string text;               // the text to paste back
  int64_t tokens = 0, context = 0;
  std::map<Phase, std::vector<Sample>> samples;
};

// Runs after each presented frame: makes the next edit once the last one's maps were drawn.
// Returns true when the bench is over: its JSON line printed (exit_code 0) or its one-line
// error on stderr (exit_code 1).
bool stepTypingBench(TypingBench& bench, AppState& state, int& exit_code);

}  // namespace attnscope
