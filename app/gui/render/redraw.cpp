#include "gui/render/redraw.h"

#include <glad/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>

#include "gui/render/gl_resources.h"
#include "gui/render/heatmap_widget.h"

namespace attnscope {
namespace {

// At most this many damaged boxes are drawn (each box draws every list reaching into it).
constexpr size_t kMaxBoxes = 4;

uint64_t mix(uint64_t h, uint64_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

uint64_t hashBytes(const void* data, size_t size) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), size));
}

template <typename T>
uint64_t bitsOf(const T& value) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

// What a list draws: vertices, indices and commands. A callback other than the heatmap
// program's (whose parameters are hashed) or ImGui's reset cannot be compared: `comparable`
// is then false and the list is redrawn every frame.
uint64_t hashList(const ImDrawList& list, bool& comparable) {
  uint64_t h = hashBytes(list.VtxBuffer.Data, static_cast<size_t>(list.VtxBuffer.Size) * sizeof(ImDrawVert));
  h = mix(h, hashBytes(list.IdxBuffer.Data, static_cast<size_t>(list.IdxBuffer.Size) * sizeof(ImDrawIdx)));
  for (const ImDrawCmd& cmd : list.CmdBuffer) {
    for (float edge : {cmd.ClipRect.x, cmd.ClipRect.y, cmd.ClipRect.z, cmd.ClipRect.w}) h = mix(h, bitsOf(edge));
    h = mix(h, bitsOf(cmd.TextureId));
    h = mix(h, (uint64_t{cmd.VtxOffset} << 32) ^ cmd.IdxOffset);
    h = mix(h, cmd.ElemCount);
    h = mix(h, bitsOf(cmd.UserCallback));
    if (cmd.UserCallback == bindHeatmapProgram) {
      const auto& params = *static_cast<const HeatmapDrawParams*>(cmd.UserCallbackData);
      h = mix(h, params.lut);
      h = mix(h, bitsOf(params.range_low));
      h = mix(h, bitsOf(params.range_high));
      h = mix(h, params.log_scale);
    } else if (cmd.UserCallback && cmd.UserCallback != ImDrawCallback_ResetRenderState) {
      comparable = false;
    }
  }
  return h;
}

// The scissor box imgui_impl_opengl3 sets for this command (its float-to-int rounding),
// within the framebuffer; empty when the backend skips the command.
PixelBox scissorOf(const ImDrawCmd& cmd, int width, int height) {
  const ImVec4& c = cmd.ClipRect;
  if (c.z <= c.x || c.w <= c.y) return {};
  const int x = static_cast<int>(c.x), w = static_cast<int>(c.z - c.x);
  const int y1 = height - static_cast<int>(static_cast<float>(height) - c.w), h = static_cast<int>(c.w - c.y);
  return {std::max(x, 0), std::max(y1 - h, 0), std::min(x + w, width), std::min(y1, height)};
}

PixelBox unite(const PixelBox& a, const PixelBox& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.x0, b.x0), std::min(a.y0, b.y0), std::max(a.x1, b.x1), std::max(a.y1, b.y1)};
}

PixelBox intersect(const PixelBox& a, const PixelBox& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// The pixels a command can touch: its vertices' bounding box (a pixel whose centre a
// triangle covers lies within it; one pixel of margin) within its scissor box. Window
// backgrounds are clipped to the whole viewport, so the scissor box alone is too coarse.
PixelBox touchedBy(const ImDrawList& list, const ImDrawCmd& cmd, int width, int height) {
  float x0 = FLT_MAX, y0 = FLT_MAX, x1 = -FLT_MAX, y1 = -FLT_MAX;
  for (unsigned int i = 0; i < cmd.ElemCount; ++i) {
    const ImVec2& p = list.VtxBuffer[static_cast<int>(cmd.VtxOffset + list.IdxBuffer[static_cast<int>(cmd.IdxOffset + i)])].pos;
    x0 = std::min(x0, p.x), y0 = std::min(y0, p.y), x1 = std::max(x1, p.x), y1 = std::max(y1, p.y);
  }
  const PixelBox vertices{static_cast<int>(std::floor(x0)) - 1, static_cast<int>(std::floor(y0)) - 1,
                          static_cast<int>(std::ceil(x1)) + 1, static_cast<int>(std::ceil(y1)) + 1};
  return intersect(vertices, scissorOf(cmd, width, height));
}

PixelBox boundsOf(const ImDrawList& list, int width, int height) {
  PixelBox box;
  for (const ImDrawCmd& cmd : list.CmdBuffer)
    if (!cmd.UserCallback && cmd.ElemCount > 0) box = unite(box, touchedBy(list, cmd, width, height));
  return box;
}

// Boxes whose union costs no more pixels than the two apart become one, then the pair whose
// union adds the fewest pixels, until at most kMaxBoxes are left. Overlapping boxes may stay
// apart: each is cleared and drawn whole, so the overlap comes out the same either way.
std::vector<PixelBox> mergeBoxes(std::vector<PixelBox> boxes) {
  for (;;) {
    size_t best_i = 0, best_j = 0;
    int64_t best_extra = INT64_MAX;
    for (size_t i = 0; i < boxes.size(); ++i) {
      for (size_t j = i + 1; j < boxes.size(); ++j) {
        const int64_t extra = unite(boxes[i], boxes[j]).area() - boxes[i].area() - boxes[j].area();
        if (extra < best_extra) best_i = i, best_j = j, best_extra = extra;
      }
    }
    if (best_extra == INT64_MAX || (best_extra > 0 && boxes.size() <= kMaxBoxes)) return boxes;
    boxes[best_i] = unite(boxes[best_i], boxes[best_j]);
    boxes.erase(boxes.begin() + static_cast<std::ptrdiff_t>(best_j));
  }
}

void clearBox(const PixelBox& box, int height, const float clear_rgb[3]) {
  glEnable(GL_SCISSOR_TEST);
  glScissor(box.x0, height - box.y1, box.x1 - box.x0, box.y1 - box.y0);
  glClearColor(clear_rgb[0], clear_rgb[1], clear_rgb[2], 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  glDisable(GL_SCISSOR_TEST);
}

// Clears `box` and draws every list that reaches into it (bounds: the pixels each list
// touches), each command clipped to it.
void redrawBox(ImDrawData& data, const std::vector<PixelBox>& bounds, const PixelBox& box, int width, int height,
               const float clear_rgb[3]) {
  clearBox(box, height, clear_rgb);
  std::vector<ImDrawList*> lists;
  std::vector<ImVec4> saved;
  for (int n = 0; n < data.CmdListsCount; ++n) {
    if (intersect(bounds[static_cast<size_t>(n)], box).empty()) continue;
    ImDrawList* list = data.CmdLists[n];
    lists.push_back(list);
    for (ImDrawCmd& cmd : list->CmdBuffer) {
      saved.push_back(cmd.ClipRect);
      if (cmd.UserCallback) continue;
      const PixelBox clipped = intersect(scissorOf(cmd, width, height), box);
      cmd.ClipRect = clipped.empty() ? ImVec4(0, 0, 0, 0)
                                     : ImVec4(static_cast<float>(clipped.x0), static_cast<float>(clipped.y0),
                                              static_cast<float>(clipped.x1), static_cast<float>(clipped.y1));
    }
  }
  if (lists.empty()) return;
  ImDrawData part = data;
  part.CmdLists = lists.data();
  part.CmdListsCount = static_cast<int>(lists.size());
  ImGui_ImplOpenGL3_RenderDrawData(&part);
  size_t at = 0;
  for (ImDrawList* list : lists)
    for (ImDrawCmd& cmd : list->CmdBuffer) cmd.ClipRect = saved[at++];
}

}  // namespace

void choosePartialRedraw(RedrawCache& cache, bool full_redraw) {
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const std::string_view name = renderer ? renderer : "";
  const bool software = name.find("llvmpipe") != std::string_view::npos || name.find("softpipe") != std::string_view::npos;
  cache = RedrawCache{};
  cache.partial = !full_redraw && software && canPresentByCopy();
}

void renderDrawData(RedrawCache& cache, ImDrawData* data, uint64_t texture_generation, int width, int height,
                    const float clear_rgb[3]) {
  glViewport(0, 0, width, height);
  // The boxes assume ImGui's coordinates are the framebuffer's (one viewport, no scaling).
  const bool same_coordinates = data->DisplayPos.x == 0.0f && data->DisplayPos.y == 0.0f &&
                                data->FramebufferScale.x == 1.0f && data->FramebufferScale.y == 1.0f;
  const PixelBox whole{0, 0, width, height};
  const bool resized = cache.width != width || cache.height != height;
  cache.width = width;
  cache.height = height;
  if (!cache.partial || !same_coordinates) {
    glClearColor(clear_rgb[0], clear_rgb[1], clear_rgb[2], 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(data);
    cache.hashes.clear();
    cache.damaged = {whole};
    return;
  }
  const size_t count = static_cast<size_t>(data->CmdListsCount);
  std::vector<uint64_t> hashes(count);
  std::vector<PixelBox> bounds(count);
  std::vector<bool> comparable(count, true);
  for (size_t n = 0; n < count; ++n) {
    bool ok = true;
    hashes[n] = hashList(*data->CmdLists[n], ok);
    comparable[n] = ok;
    bounds[n] = boundsOf(*data->CmdLists[n], width, height);
  }
  std::vector<PixelBox> damaged;
  if (resized || cache.hashes.size() != count || cache.texture_generation != texture_generation) {
    damaged.push_back(whole);
  } else {
    for (size_t n = 0; n < count; ++n) {
      if (comparable[n] && hashes[n] == cache.hashes[n]) continue;
      for (const PixelBox& box : {cache.bounds[n], bounds[n]})
        if (!box.empty()) damaged.push_back(box);
    }
    ++cache.partial_frames;
  }
  damaged = mergeBoxes(std::move(damaged));
  for (const PixelBox& box : damaged) redrawBox(*data, bounds, box, width, height, clear_rgb);
  cache.hashes = std::move(hashes);
  cache.bounds = std::move(bounds);
  cache.damaged = std::move(damaged);
  cache.texture_generation = texture_generation;
}

void presentFrame(RedrawCache& cache, GLFWwindow* window) {
  if (!cache.partial) {
    glfwSwapBuffers(window);
    return;
  }
  // A copy leaves the back buffer as it is (a swap leaves it undefined).
  if (cache.exposed) cache.damaged = {PixelBox{0, 0, cache.width, cache.height}};
  cache.exposed = false;
  for (const PixelBox& box : cache.damaged) presentByCopy(box, cache.height);
}

}  // namespace attnscope
