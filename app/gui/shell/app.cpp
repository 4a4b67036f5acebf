// The desktop app: start-up, the frame loop and shutdown. What happens inside a frame is
// spelled out by the functions it calls (compute_sync, shortcuts, the panels, scripting).
#include <glad/gl.h>
// glad before GLFW: GLFW must not pull in the system GL header first.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gui/shell/app_options.h"
#include "gui/shell/frame_stats.h"
#include "gui/shell/app_state.h"
#include "gui/shell/app_window.h"
#include "gui/shell/feature_registry.h"
#include "gui/jobs/compute_sync.h"
#include "gui/jobs/export_jobs.h"
#include "gui/gui.h"
#include "gui/shell/panels.h"
#include "gui/shell/persistence.h"
#include "gui/shell/scripting.h"
#include "gui/shell/shortcuts.h"
#include "gui/shell/typing_bench.h"
#include "model/local_models.h"
#include "tensor/interrupt.h"

namespace attnscope {
namespace {

constexpr auto kFramesModeTimeout = std::chrono::seconds(120);

std::string windowTitle(const AppState& state) {
  const Settings& s = state.settings;
  std::string subject;
  if (s.source == InputSource::Bundle) {
    subject = "bundle " + std::filesystem::path(s.bundle_path).filename().string();
  } else if (s.source == InputSource::Synthetic) {
    subject = "synthetic";
  } else if (s.source == InputSource::Model) {
    subject = "model " + modelShortName(s.model);
  } else {
    subject = s.text.substr(0, s.text.find('\n'));
    if (subject.size() > 28) {
      size_t cut = 28;
      while (cut > 0 && (static_cast<unsigned char>(subject[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
      subject = subject.substr(0, cut) + "...";
    }
  }
  std::string title = "attnscope \xE2\x80\x94 " + subject;
  if (const ViewModel* v = state.compute.view.get()) {
    if (v->layers > 1) title += " (" + std::to_string(v->layers) + " layers, L=" + std::to_string(v->mapL()) + ", H=" + std::to_string(v->H) + ")";
    else title += " (L=" + std::to_string(v->mapL()) + ", H=" + std::to_string(v->H) + ")";
  }
  return title;
}

// A new compute result (jobs/compute_sync.h): a state-log line, the settings saved when a
// cancelled load put the shown model back, and the views clamped to it.
void applyComputeResult(AppState& state) {
  const Received received = receiveResult(state.compute, state.settings);
  if (received.settings_returned) saveLater(state);
  if (!received.ran_folder.empty() && rememberModel(state.view, received.ran_folder)) saveLater(state);  // view.json
  if (received.table) markStateChanged(state);
  if (!received.taken) return;
  markStateChanged(state);
  followResult(state);
}

// Before drawing: results, exports, spinner, textures and title follow the latest state.
void updateBeforeFrame(GLFWwindow* window, AppState& state) {
  startFrame(state.compute);
  applyComputeResult(state);
  updateShownResult(state);  // a generation shown, rollout / flow: what every view shows
  updateExports(state.exports, state.compute, state.settings, state.view.focus);
  if (updateBusy(state.compute)) markStateChanged(state);
  GpuState& gpu = state.gpu;
  const int64_t b = state.view.focus.batch_item;
  const auto upload_started = std::chrono::steady_clock::now();
  bool textures_changed = updateViewTextures(gpu.textures, state.compute.view.get(), b);
  textures_changed |= updateViewTextures(gpu.correct_textures, state.compute.correctView().get(), b);
  textures_changed |= uploadFocusedScores(gpu.textures, state.compute.view.get(), state.view.focus);
  textures_changed |= uploadFocusedScores(gpu.correct_textures, state.compute.correctView().get(), state.view.focus);
  if (textures_changed) {
    ++gpu.texture_generation;
    state.compute.upload_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - upload_started).count();
  }
  updateFeatures(state);
  const std::string title = windowTitle(state);
  if (title != state.ui.window_title) {
    state.ui.window_title = title;
    glfwSetWindowTitle(window, title.c_str());
  }
}

void drawPanels(AppState& state) {
  state.script.layout.clear();
  state.script.focus_axis = {};
  state.script.focus_note.clear();
  handleShortcuts(state);
  drawFeatures(state);
}

// After drawing: what changed this frame becomes the state the next frame (and the state
// log) sees.
void noteFrameChanges(AppState& state) {
  if (state.view.hover_next != state.view.hover) markStateChanged(state);
  // A widget held by the mouse (slider drag): tests wait for its release before moving on.
  if (ImGui::IsAnyItemActive() != state.ui.item_active) {
    state.ui.item_active = ImGui::IsAnyItemActive();
    markStateChanged(state);
  }
  if (state.script.state_log && state.script.focus_note != state.script.focus_note_logged) {
    state.script.focus_note_logged = state.script.focus_note;
    markStateChanged(state);
  }
  if (state.script.state_log && state.script.focus_axis != state.script.focus_axis_logged) {
    state.script.focus_axis_logged = state.script.focus_axis;
    markStateChanged(state);
  }
  // Auto-sized windows (toast, help) settle a frame after they change: log that too.
  if (state.script.state_log && (state.script.layout.rects != state.script.layout_logged ||
                                 state.script.layout.clips != state.script.clips_logged)) {
    state.script.layout_logged = state.script.layout.rects;
    state.script.clips_logged = state.script.layout.clips;
    markStateChanged(state);
  }
  if (state.view.map_hover_next != state.view.map_hover) markStateChanged(state);
  state.view.hover = state.view.hover_next;
  state.view.hover_next = HoverCell{};
  state.view.map_hover = state.view.map_hover_next;
  state.view.map_hover_next = HoverCell{};
}

// Renders ImGui's draw data into the back buffer (on a software renderer only what changed:
// gui/redraw.h); a requested screenshot reads it back.
void renderFrame(AppState& state, int width, int height) {
  constexpr float kBackground[3] = {0.07f, 0.07f, 0.08f};
  GpuState& gpu = state.gpu;
  renderDrawData(gpu.redraw, ImGui::GetDrawData(), gpu.texture_generation, width, height, kBackground);
  gpu.draw_params.clear();
  if (state.exports.screenshot_requested) {
    state.exports.screenshot_requested = false;
    requestScreenshotExport(state.exports, readWindowPixels(width, height));
  }
}

// The --frames rule: N frames after the first result has settled, or a timeout.
struct FramesMode {
  int wanted = -1;  // -1: run until the user quits
  int with_result = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// True when this frame is the last one; sets exit_code on a timeout. While the
// --frame-stats drag moves a slider, every frame counts (a recompute is always pending).
bool framesDone(FramesMode& frames, const AppState& state, bool scripted_drag, int& exit_code) {
  const bool settled = scripted_drag || (state.compute.traceGeneration() > 0 && !state.compute.pending());
  if (settled) ++frames.with_result;
  if (frames.wanted <= 0) return false;
  if (std::chrono::steady_clock::now() - frames.started > kFramesModeTimeout) {
    std::fprintf(stderr, "attnscope: --frames: the computation did not finish in time\n");
    exit_code = 1;
    return true;
  }
  return settled && frames.with_result >= frames.wanted;
}

// Runs frames until the user quits (or --frames is done); returns the exit code.
int runFrameLoop(GLFWwindow* window, const AppOptions& options, AppState& state, int& fb_width, int& fb_height,
                 std::chrono::steady_clock::time_point launched) {
  int exit_code = 0;
  FramesMode frames;
  frames.wanted = options.frames;
  FrameStats stats;
  stats.started = launched;
  TypingBench bench;
  bench.edits = options.bench_typing;
  int scripted_frame = 0;
  for (;;) {
    // A compute job wakes the loop when its result is ready (ComputeWorker's on_result), so
    // while one runs the frames only follow the spinner and the progress: every frame drawn
    // then takes a core the job could use.
    const bool animating = exportBusy(state.exports) || state.exports.toast.has_value() || featuresBusy(state);
    if (options.frames > 0) glfwPollEvents();
    else glfwWaitEventsTimeout(animating ? 0.016 : 0.1);

    updateBeforeFrame(window, state);
    const bool scripted_drag = options.frame_stats && state.compute.traceGeneration() > 0;
    if (scripted_drag) scriptedSliderStep(state, scripted_frame++);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    drawPanels(state);
    ImGui::Render();
    if (postIfSettingsChanged(state.compute, state.settings, computeAsk(state))) markStateChanged(state);
    noteFrameChanges(state);

    glfwGetFramebufferSize(window, &fb_width, &fb_height);
    renderFrame(state, fb_width, fb_height);
    if (options.check_gl) {
      if (const GLenum gl_error = glGetError(); gl_error != GL_NO_ERROR) {
        std::fprintf(stderr, "attnscope: OpenGL error 0x%04x\n", gl_error);
        return 3;
      }
    }
    const bool last_frame =
        framesDone(frames, state, scripted_drag, exit_code) || glfwWindowShouldClose(window) || state.ui.quit_requested ||
        *state.ui.interrupted;
    if (last_frame && !options.screenshot.empty() && !writeScreenshot(options.screenshot, fb_width, fb_height)) {
      std::fprintf(stderr, "attnscope: --screenshot %s: cannot write\n", options.screenshot.c_str());
      exit_code = 1;
    }
    presentFrame(state.gpu.redraw, window);
    if (noteMapsDrawn(state.compute)) markStateChanged(state);
    if (bench.edits > 0 && stepTypingBench(bench, state, exit_code)) state.ui.quit_requested = true;
    if (options.frame_stats) recordFrame(stats, scripted_drag);
    if (last_frame && options.frame_stats) std::printf("%s\n", frameStatsLine(stats).c_str());

    writeStateLogIfPending(state, fb_width, fb_height);
    saveWhenDue(state);
    if (last_frame) return exit_code;
  }
}

}  // namespace

int runGui(int argc, char** argv) {
  const auto launched = std::chrono::steady_clock::now();  // --frame-stats: time to the first frame
  AppOptions options;
  if (const std::string error = parseAppOptions(argc, argv, options); !error.empty()) {
    std::fprintf(stderr, "attnscope: %s\n%s\n", error.c_str(), appUsage());
    return 2;
  }
  if (options.help) {
    std::printf("%s\n%s\n", appUsage(), appHelp());
    return 0;
  }

  AppState state;
  if (const std::string error = loadStartupSettings(options, state); !error.empty()) {
    std::fprintf(stderr, "attnscope: %s\n", error.c_str());
    return 1;
  }
  if (const std::string error = openStateLog(options.state_log, state); !error.empty()) {
    std::fprintf(stderr, "attnscope: %s\n", error.c_str());
    return 2;
  }
  state.ui.window_title = windowTitle(state);
  state.ui.shipped_models = shippedModels();
  std::string error;
  GLFWwindow* window = openAppWindow(options, state, error);
  if (!window) {
    std::fprintf(stderr, "attnscope: %s\n", error.c_str());
    return 1;
  }

  // SIGINT/SIGTERM: save the settings and exit 0 like Ctrl+Q (a second signal exits at once).
  setInterruptHandler([interrupted = state.ui.interrupted](int) {
    *interrupted = true;
    glfwPostEmptyEvent();
  });
  state.compute.worker = std::make_unique<ComputeWorker>([] { glfwPostEmptyEvent(); });
  int fb_width = 0, fb_height = 0;
  const int exit_code = runFrameLoop(window, options, state, fb_width, fb_height, launched);

  setInterruptHandler(nullptr);
  closeStateLog(state, fb_width, fb_height);
  if (state.persist.dirty) saveSettingsNow(state);  // unchanged settings: the file is not rewritten
  finishExports(state.exports);
  finishFeatures(state);
  state.compute.worker.reset();
  closeAppWindow(window, state);
  return exit_code;
}

}  // namespace attnscope
