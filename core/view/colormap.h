// Colour tables shared by the GL shader (uploaded as a lookup texture) and the CPU
// exporter, so a figure and the screen show the same colour for the same value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "registry/name_table.h"

namespace attnscope {

enum class Colormap { Viridis, Cividis, Magma, Diverging };

using Rgb = std::array<uint8_t, 3>;
using RgbTable = std::array<Rgb, 256>;

inline constexpr int kColormapCount = 4;

// Every colour map, in enum order (the app's combo lists them all).
std::vector<Colormap> allColormaps();
const RgbTable& colormapTable(Colormap map);
const NameTable<Colormap>& colormapNames();  // "viridis", "cividis", "magma", "diverging"
const char* colormapName(Colormap map);      // colormapNames().name(map)

// The one mapping rule (Polyscope style): t = clamp((v - low) / (high - low), 0, 1),
// index = floor(t * 255 + 0.5). The fragment shader implements exactly this.
int colormapIndex(float value, float low, float high);
Rgb colormapColor(Colormap map, float value, float low, float high);

// Colour of a masked cell (-inf score, or a blocked mask cell): neutral grey, with a
// lighter hatch stripe where (row + col) is even in the screen shader and exporter.
inline constexpr Rgb kMaskedColor = {128, 128, 128};
inline constexpr Rgb kMaskedHatchColor = {160, 160, 160};

}  // namespace attnscope
