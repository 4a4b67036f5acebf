// attnscope: one executable. `compute`, `export`, `bench`, `analyze`, `model`, `diff` and `models` run headless; anything else opens
// the desktop app (`attnscope [gui] [BUNDLE] [flags]`).
#include <malloc.h>

#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "gui/gui.h"
#include "tensor/interrupt.h"

int main(int argc, char** argv) {
  // Temporaries up to 32 MiB (a tile's row blocks: 2 x 8 MiB per thread at S = 32768) come
  // from the heap and up to 64 MiB of freed heap stays mapped: first-touching fresh pages
  // costs 5-10 ms per MiB on these virtual machines (repeated exact 256x256 tiles took 230-425
  // ms instead of 40-75 ms under load), far more than the maths. Larger buffers (a trace's
  // maps) are still mapped on their own and returned when freed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // Before any thread starts: SIGINT/SIGTERM remove half-written outputs (or save, in the app).
  attnscope::startInterruptWatcher();
  if (argc >= 2) {
    const char* command = argv[1];
    if (std::strcmp(command, "compute") == 0) return attnscope::runComputeCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "export") == 0) return attnscope::runExportCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "bench") == 0) return attnscope::runBenchCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "analyze") == 0) return attnscope::runAnalyzeCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "model") == 0) return attnscope::runModelCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "diff") == 0) return attnscope::runDiffCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "models") == 0) return attnscope::runModelsCommand(argc - 1, argv + 1);
    if (std::strcmp(command, "gui") == 0) return attnscope::runGui(argc - 1, argv + 1);
  }
  return attnscope::runGui(argc, argv);
}
