// Numbers as panels and tooltips print them: three significant digits, so a small
// probability reads 0.0123%, not 0.0%.
#pragma once

#include <string>

namespace attnscope {

// value with `digits` significant digits in plain notation ("12.3", "0.0123", "100"; 0 -> "0").
std::string significantText(double value, int digits = 3);
// A probability as a percentage with three significant digits: 0.123 -> "12.3%", 1.23e-4 -> "0.0123%".
std::string percentText(double probability);

}  // namespace attnscope
