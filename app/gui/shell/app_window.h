// The window: GLFW + an OpenGL 3.3 core context (glad), Dear ImGui with its fonts and
// style, the key callback, and the app's GL resources. Opened once per runGui.
#pragma once

#include <string>

#include "gui/shell/app_options.h"
#include "gui/shell/app_state.h"

struct GLFWwindow;

namespace attnscope {

// Opens the window titled state.ui.window_title and sets ImGui and GL up for state
// (key presses are queued into state.ui.key_presses). Null with a one-line error when
// there is no display, no GL 3.3 or the shaders fail.
GLFWwindow* openAppWindow(const AppOptions& options, AppState& state, std::string& error);
// Releases state.gpu, ImGui and the window (after the last frame).
void closeAppWindow(GLFWwindow* window, AppState& state);

}  // namespace attnscope
