#include "view/colormap.h"

#include <algorithm>
#include <cmath>

#include "tensor/tensor.h"

namespace attnscope {
namespace {
#include "colormap_tables.inc"
}  // namespace

const RgbTable& colormapTable(Colormap map) {
  switch (map) {
    case Colormap::Viridis: return kViridisTable;
    case Colormap::Cividis: return kCividisTable;
    case Colormap::Magma: return kMagmaTable;
    case Colormap::Diverging: return kDivergingTable;
  }
  return kViridisTable;
}

const char* colormapName(Colormap map) {
  switch (map) {
    case Colormap::Viridis: return "viridis";
    case Colormap::Cividis: return "cividis";
    case Colormap::Magma: return "magma";
    case Colormap::Diverging: return "diverging";
  }
  return "viridis";
}

Colormap colormapFromName(const std::string& name) {
  for (Colormap map : {Colormap::Viridis, Colormap::Cividis, Colormap::Magma, Colormap::Diverging}) {
    if (name == colormapName(map)) return map;
  }
  throw InputError("unknown colormap '" + name + "' (use viridis, cividis, magma or diverging)");
}

int colormapIndex(float value, float low, float high) {
  float t = high > low ? (value - low) / (high - low) : 0.5f;
  if (!(t >= 0.0f)) t = 0.0f;  // also catches NaN
  t = std::min(t, 1.0f);
  return static_cast<int>(std::floor(t * 255.0f + 0.5f));
}

Rgb colormapColor(Colormap map, float value, float low, float high) {
  return colormapTable(map)[colormapIndex(value, low, high)];
}

}  // namespace attnscope
