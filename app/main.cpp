// attnscope: one executable. `compute`, `export`, `bench`, `analyze` and `model` run headless; anything else opens
// the desktop app (`attnscope [gui] [BUNDLE] [flags]`).
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "gui/gui.h"
#include "tensor/interrupt.h"

int main(int argc, char** argv) {
  // Before any thread starts: SIGINT/SIGTERM remove half-written outputs (or save, in the app).
  attnscope::startInterruptWatcher();
  if (argc >= 2) {
    const char* command = argv[1];
    if (std::strcmp(command, "compute") == 0) return attnscope::runComputeCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "export") == 0) return attnscope::runExportCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "bench") == 0) return attnscope::runBenchCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "analyze") == 0) return attnscope::runAnalyzeCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "model") == 0) return attnscope::runModelCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "gui") == 0) return attnscope::runGui(argc - 1, argv + 1);
  }
  return attnscope::runGui(argc, argv);
}
