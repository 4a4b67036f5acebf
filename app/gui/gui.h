// The desktop app. argv[0] is "gui" or the program name; accepts
// [BUNDLE] [--settings FILE] [--frames N] [--screenshot PATH] and the test flags.
#pragma once

namespace attnscope {

int runGui(int argc, char** argv);

}  // namespace attnscope
