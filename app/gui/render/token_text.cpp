#include "gui/render/token_text.h"

namespace attnscope {

std::string visibleToken(const std::string& label) {
  constexpr const char* kSpace = "\u2423";
  constexpr const char* kNewline = "\u21b5";
  std::string out;
  out.reserve(label.size());
  for (size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    if (c == ' ') {
      out += kSpace;
    } else if (c == '\n') {
      out += kNewline;
    } else if (c == '\\' && i + 1 < label.size()) {  // an escape of the model labels: "\n", "\\", "\t", "\xNN"
      if (label[i + 1] == 'n') out += kNewline;
      else out += label.substr(i, 2);
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace attnscope
