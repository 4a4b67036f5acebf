// PLACEHOLDER (replaced by the compute command implementation).
#include <cstdio>
#include "cli/commands.h"
namespace attnscope {
int runComputeCommand(int, char**) { std::fputs("compute: not built yet\n", stderr); return 2; }
}
