// Hooks for tests and scripts: the state log (one JSON line per visible change, with the
// widget rectangles of the frame) and reading the rendered window back.
#pragma once

#include <string>

#include "figure/figure.h"
#include "gui/shell/app_state.h"

namespace attnscope {

// Opens --state-log PATH for appending; "" or the one-line error (exit 2).
std::string openStateLog(const std::string& path, AppState& state);
// Writes a line when one is pending (after a rendered frame of width x height pixels).
void writeStateLogIfPending(AppState& state, int width, int height);
// The last line, always, then closes the log (at exit).
void closeStateLog(AppState& state, int width, int height);

// The rendered frame in the back buffer, top row first ([height, width] RGB).
RgbImage readWindowPixels(int width, int height);
// --screenshot: the window to PNG, atomically (never half a file). False when it fails.
bool writeScreenshot(const std::string& path, int width, int height);

}  // namespace attnscope
