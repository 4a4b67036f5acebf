// Token labels as the app draws them (axis labels, tooltips, query buttons, predictions):
// whitespace made visible. The labels themselves (state log, exports) keep their text.
#pragma once

#include <string>

namespace attnscope {

// " " -> "␣" (U+2423), a newline (or the model labels' escaped "\n") -> "↵" (U+21B5);
// everything else as it is ("\\\\" stays an escaped backslash). shell/app_window.cpp
// merges both glyphs into the font atlas.
std::string visibleToken(const std::string& label);

}  // namespace attnscope
