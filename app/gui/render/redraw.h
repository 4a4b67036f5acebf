// Partial redraw: on a software renderer only what changed since the last frame is drawn.
// On llvmpipe (Mesa's software GL: Xvfb, machines without a GPU) ImGui's blended, textured
// fill costs about 10 ns of CPU per pixel, so a whole 1280x800 frame costs 10-15 ms of CPU
// while a slider drag changes one panel. There the frame is shown by copying the changed
// parts of the back buffer to the window (GLX_MESA_copy_sub_buffer) instead of swapping, so
// the back buffer keeps the last frame (the whole of it after an Expose). Each frame, a draw list whose contents (a 64-bit hash of its vertices, indices,
// commands and heatmap parameters) differ from the list drawn at the same place in the last
// frame marks the pixels it touched then and touches now as damaged; only the damaged boxes
// are cleared and drawn again, with every list clipped to them, so overlaps come out as a
// whole redraw would, pixel for pixel (the backend's own integer scissor boxes are clipped).
// A made or deleted texture (GL reuses ids), a resize or a different number of lists redraws
// everything. Elsewhere (a GPU, --full-redraw) every frame is drawn whole and swapped.
#pragma once

#include <cstdint>
#include <vector>

struct ImDrawData;
struct GLFWwindow;

namespace attnscope {

// Pixels [x0, x1) x [y0, y1), top-left origin (ImGui's).
struct PixelBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  int64_t area() const { return empty() ? 0 : int64_t{x1 - x0} * (y1 - y0); }
};

struct RedrawCache {
  bool partial = false;             // chosen once the window is open (choosePartialRedraw)
  int width = 0, height = 0;        // of the kept back buffer
  uint64_t texture_generation = 0;  // GpuState::texture_generation the kept pixels were drawn with
  std::vector<uint64_t> hashes;     // the last frame's draw lists, in draw order
  std::vector<PixelBox> bounds;     // the pixels each touched
  std::vector<PixelBox> damaged;    // drawn in the last frame: what presentFrame copies
  bool exposed = false;             // the window lost pixels (Expose): copy all of it once
  int64_t partial_frames = 0;       // frames drawn on the kept pixels (state log)
};

// Partial redraw where the renderer is software and the back buffer can be shown by
// copying (needs the window's context current); never with full_redraw (--full-redraw).
void choosePartialRedraw(RedrawCache& cache, bool full_redraw);
// Draws ImGui's draw data into the back buffer (width x height): the damaged boxes on a
// partial cache, else all of it (clear_rgb: the window background).
void renderDrawData(RedrawCache& cache, ImDrawData* data, uint64_t texture_generation, int width, int height,
                    const float clear_rgb[3]);
// Shows the back buffer: its damaged boxes (everything after an Expose) copied to the
// window on a partial cache, else swapped.
void presentFrame(RedrawCache& cache, GLFWwindow* window);

// GLX_MESA_copy_sub_buffer (present.cpp, apart from glad's GL header): whether the current
// context has it, and the copy of one box of the back buffer to the window.
bool canPresentByCopy();
void presentByCopy(const PixelBox& box, int height);

}  // namespace attnscope
