// Between the UI thread and the compute worker: post a job when a compute-relevant
// setting changed (never per frame), take the newest result when it is ready.
#pragma once

#include "gui/shell/app_state.h"

namespace attnscope {

// Takes the worker's newest result, if any, and clamps the focus to it.
void receiveResult(AppState& state);
// Posts the settings when they differ from the last posted job's (or nothing was posted).
void postIfSettingsChanged(AppState& state);
// Shows the spinner once a recompute has run for ~100 ms; follows a tiled overview's progress.
void updateBusy(AppState& state);
// Stops a tiled overview in progress (Cancel button, Escape); the maps shown stay, marked stale.
void cancelCompute(AppState& state);
// A tiled source zoomed in the focus view: asks for the visible window's tile when the
// window, the focused map or the result changed, and takes the newest tile.
void updateZoomTile(AppState& state);
// Posts the settings again, changed or not (after a cancel).
void recomputeNow(AppState& state);

}  // namespace attnscope
