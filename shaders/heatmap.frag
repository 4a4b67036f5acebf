#version 330 core
// Colours one value per texel through a 256x1 colormap lookup texture, with exactly the
// rule of core/colormap.h colormapIndex(): t = clamp((v - lo) / (hi - lo), 0, 1),
// index = floor(t * 255 + 0.5). Masked cells are stored as -inf and drawn grey, with a
// lighter hatch where (row + col) is even (kMaskedColor / kMaskedHatchColor) when cells
// are at least 2 px on screen.
in vec2 frag_uv;
out vec4 out_color;

uniform sampler2D values;      // GL_R32F [rows, cols], nearest
uniform sampler2D colormap;    // 256x1 RGB lookup table
uniform float range_low;       // in log10 units when log_scale is set
uniform float range_high;
uniform int log_scale;         // 1: colour log10(v) (probabilities)
uniform vec3 masked_color;
uniform vec3 masked_hatch_color;

void main() {
  ivec2 size = textureSize(values, 0);
  ivec2 cell = clamp(ivec2(floor(frag_uv * vec2(size))), ivec2(0), size - 1);
  float v = texelFetch(values, cell, 0).r;
  if (v < -3.0e38) {  // -inf sentinel: masked (never a real score)
    // Hatch only while a cell spans at least 2 screen pixels: smaller cells would alias
    // the stripe pattern into large moire blocks.
    vec2 cells_per_pixel = fwidth(frag_uv * vec2(size));
    bool hatch = max(cells_per_pixel.x, cells_per_pixel.y) <= 0.5 && ((cell.x + cell.y) % 2) == 0;
    out_color = vec4(hatch ? masked_hatch_color : masked_color, 1.0);
    return;
  }
  if (log_scale == 1) v = log(max(v, 1e-30)) / log(10.0);
  float t = range_high > range_low ? (v - range_low) / (range_high - range_low) : 0.5;
  if (!(t >= 0.0)) t = 0.0;  // also catches NaN, as colormapIndex() does
  t = min(t, 1.0);
  int index = int(floor(t * 255.0 + 0.5));
  out_color = vec4(texelFetch(colormap, ivec2(index, 0), 0).rgb, 1.0);
}
