// PLACEHOLDER (replaced by the GUI implementation).
#include <cstdio>
#include "gui/gui.h"
namespace attnscope {
int runGui(int, char**) { std::fputs("gui: not built yet\n", stderr); return 2; }
}
