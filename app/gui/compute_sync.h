// Between the UI thread and the compute worker: post a job when a compute-relevant
// setting changed (never per frame), take the newest result when it is ready.
#pragma once

#include "gui/app_state.h"

namespace attnscope {

// Takes the worker's newest result, if any, and clamps the focus to it.
void receiveResult(AppState& state);
// Posts the settings when they differ from the last posted job's (or nothing was posted).
void postIfSettingsChanged(AppState& state);
// Shows the spinner once a recompute has run for ~100 ms.
void updateBusy(AppState& state);

}  // namespace attnscope
