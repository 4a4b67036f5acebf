#include "gui/shell/scripting.h"

#include <glad/gl.h>
#include <imgui.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "gui/jobs/export_jobs.h"
#include "gui/shell/app_state.h"
#include "gui/shell/feature_registry.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

// The shell's own keys: notices, overlays, widget rectangles, partial redraw.
void shellToJson(const AppState& state, int width, int height, nlohmann::json& line) {
  line["notice"] = state.ui.notice;
  line["item_active"] = state.ui.item_active;
  line["help_open"] = state.ui.show_help;
  line["partial_redraws"] = state.gpu.redraw.partial_frames;  // frames drawn on the kept pixels
  line["window"] = {width, height};
  nlohmann::json glyphs = nlohmann::json::object();  // which special glyphs the font atlas has
  const std::pair<const char*, ImWchar> marks[] = {
      {"\u2423", 0x2423}, {"\u21b5", 0x21B5}, {"\u263a", 0x263A}, {"\u2764", 0x2764}, {"\ufffd", 0xFFFD}};
  for (const auto& [mark, codepoint] : marks) glyphs[mark] = ImGui::GetFont()->FindGlyphNoFallback(codepoint) != nullptr;
  line["font_glyphs"] = glyphs;
  line["font_atlas"] = {ImGui::GetIO().Fonts->TexWidth, ImGui::GetIO().Fonts->TexHeight};  // pixels
  nlohmann::json rects = nlohmann::json::object();
  for (const auto& [name, r] : state.script.layout.rects) rects[name] = {r.x, r.y, r.w, r.h};
  line["rects"] = rects;
  nlohmann::json clips = nlohmann::json::object();  // where each rectangle can be seen whole
  for (const auto& [name, r] : state.script.layout.clips) clips[name] = {r.x, r.y, r.w, r.h};
  line["clips"] = clips;
  line["texts"] = state.script.layout.texts;  // labels and notes as drawn (WidgetRects::recordText)
}

// One JSON line per visible change, composed from each feature's keys (tests read them).
void writeStateLog(AppState& state, int width, int height) {
  nlohmann::json line;
  computeToJson(state.compute, line);
  exportsToJson(state.exports, state.settings, line);
  featuresToJson(state, line);
  shellToJson(state, width, height, line);
  const std::string text = line.dump();
  if (text == state.script.last_line) return;
  state.script.last_line = text;
  std::fprintf(state.script.state_log, "%s\n", text.c_str());
  std::fflush(state.script.state_log);
}

}  // namespace

std::string openStateLog(const std::string& path, AppState& state) {
  if (path.empty()) return "";
  state.script.state_log = std::fopen(path.c_str(), "a");
  if (!state.script.state_log) return "--state-log " + path + ": cannot open (" + std::strerror(errno) + ")";
  state.script.layout.enabled = true;
  return "";
}

void writeStateLogIfPending(AppState& state, int width, int height) {
  if (std::exchange(state.exports.log_pending, false)) markStateChanged(state);  // the export service's keys
  if (!state.script.state_log || !state.script.pending) return;
  state.script.pending = false;
  writeStateLog(state, width, height);
}

void closeStateLog(AppState& state, int width, int height) {
  if (!state.script.state_log) return;
  writeStateLog(state, width, height);
  std::fclose(state.script.state_log);
  state.script.state_log = nullptr;
}

RgbImage readWindowPixels(int width, int height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  std::vector<Rgb> bottom_up(static_cast<size_t>(width) * height);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, bottom_up.data());
  image.pixels.resize(bottom_up.size());
  for (int y = 0; y < height; ++y) {
    std::copy_n(&bottom_up[static_cast<size_t>(height - 1 - y) * width], width,
                &image.pixels[static_cast<size_t>(y) * width]);
  }
  return image;
}

bool writeScreenshot(const std::string& path, int width, int height) {
  try {
    writeFileAtomic(path, encodePng(readWindowPixels(width, height)));
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace attnscope
