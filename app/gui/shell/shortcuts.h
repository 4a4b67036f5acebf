// Keyboard shortcuts, from the key presses queued since the last frame (F1 lists them).
#pragma once

#include "gui/shell/app_state.h"

namespace attnscope {

// Once per frame, inside the ImGui frame (it asks ImGui whether a text box has focus).
void handleShortcuts(AppState& state);

}  // namespace attnscope
