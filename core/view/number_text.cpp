#include "view/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace attnscope {

std::string significantText(double value, int digits) {
  if (value == 0.0 || !std::isfinite(value)) return value == 0.0 ? "0" : std::to_string(value);
  // The decimal exponent after rounding to `digits` (0.0099999 -> 1.00e-02), then as many
  // decimals after the point; at most 12 (smaller values read 0).
  char text[64];
  std::snprintf(text, sizeof text, "%.*e", std::max(0, digits - 1), value);
  const int magnitude = std::atoi(std::strchr(text, 'e') + 1);
  const int decimals = std::clamp(digits - 1 - magnitude, 0, 12);
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string percentText(double probability) { return significantText(100.0 * probability) + "%"; }

}  // namespace attnscope
