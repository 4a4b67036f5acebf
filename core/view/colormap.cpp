#include "view/colormap.h"

#include <algorithm>
#include <cmath>

#include "tensor/tensor.h"

namespace attnscope {
namespace {
#include "colormap_tables.inc"

// The one registry: a colour map is one row here.
struct ColormapRow {
  Colormap map;
  const char* name;
  const RgbTable* table;
};
constexpr ColormapRow kColormapRows[kColormapCount] = {
    {Colormap::Viridis, "viridis", &kViridisTable},
    {Colormap::Cividis, "cividis", &kCividisTable},
    {Colormap::Magma, "magma", &kMagmaTable},
    {Colormap::Diverging, "diverging", &kDivergingTable},
};

const ColormapRow& rowOf(Colormap map) {
  for (const ColormapRow& row : kColormapRows)
    if (row.map == map) return row;
  return kColormapRows[0];
}

}  // namespace

std::vector<Colormap> allColormaps() { return colormapNames().values(); }

const RgbTable& colormapTable(Colormap map) { return *rowOf(map).table; }

const char* colormapName(Colormap map) { return colormapNames().name(map); }

const NameTable<Colormap>& colormapNames() {
  static const NameTable<Colormap> table("colormap", kColormapRows, &ColormapRow::map, &ColormapRow::name);
  return table;
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
