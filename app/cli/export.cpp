// PLACEHOLDER (replaced by the export command implementation).
#include <cstdio>
#include "cli/commands.h"
namespace attnscope {
int runExportCommand(int, char**) { std::fputs("export: not built yet\n", stderr); return 2; }
}
