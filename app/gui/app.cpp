// The desktop app: flags, window, main loop, shortcuts, persistence, scripting hooks.
//   attnscope [gui] [BUNDLE] [--settings FILE] [--frames N] [--screenshot PATH]
//             [--state-log PATH] [--size WxH] [--check-gl]
#include <glad/gl.h>
// glad before GLFW: GLFW must not pull in the system GL header first.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "figure/figure.h"
#include "gui/app_state.h"
#include "gui/export_jobs.h"
#include "gui/gl_resources.h"
#include "gui/gui.h"
#include "gui/panels.h"
#include "tensor/npy.h"
#include "config/settings.h"

namespace attnscope {
namespace {

constexpr const char* kUsage =
    "usage: attnscope [gui] [BUNDLE] [--settings FILE] [--frames N] [--screenshot PATH] "
    "[--state-log PATH] [--size WxH] [--check-gl]";
constexpr const char* kHelp =
    "attnscope: see multi-head attention live.\n"
    "\n"
    "  attnscope [gui] [BUNDLE] [flags]   open the desktop app (demo sentence, or a bundle folder)\n"
    "  attnscope compute --help           compute every stage to .npy files (no display)\n"
    "  attnscope export --help            write PNG/SVG/PDF/NPY/CSV figures (no display)\n"
    "\n"
    "app flags:\n"
    "  --settings FILE     start from saved settings (every export writes one beside it)\n"
    "  --frames N          render N frames after the first result, then exit (scripting)\n"
    "  --screenshot PATH   write the window to PNG after the last frame\n"
    "  --state-log PATH    append one JSON line per visible change (tests)\n"
    "  --size WxH          window size (default 1440x900)\n"
    "  --check-gl          exit 3 on any OpenGL error\n"
    "\n"
    "In the app, F1 lists the keyboard shortcuts.";
constexpr const char* kCjkFont = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc";
constexpr ImWchar kGreekGlyphs[] = {0x0370, 0x03FF, 0};  // must outlive the font atlas
constexpr auto kSaveDelay = std::chrono::seconds(1);
constexpr auto kFramesModeTimeout = std::chrono::seconds(120);
constexpr auto kSpinnerDelay = std::chrono::milliseconds(100);

struct Options {
  std::string bundle;
  std::string settings_file;
  std::string screenshot;
  std::string state_log;
  int frames = -1;  // -1: run until the user quits
  int width = 1440, height = 900;
  bool check_gl = false;
  bool help = false;
};

bool parseInt(const char* text, int low, int high, int& out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) return false;
  out = static_cast<int>(value);
  return true;
}

// Returns "" on success, else the one-line error.
std::string parseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--settings" || arg == "--screenshot" || arg == "--state-log" || arg == "--frames" ||
        arg == "--size") {
      if (i + 1 >= argc) return arg + " needs a value";
      const char* v = argv[++i];
      if (arg == "--settings") options.settings_file = v;
      if (arg == "--screenshot") options.screenshot = v;
      if (arg == "--state-log") options.state_log = v;
      if (arg == "--frames" && !parseInt(v, 1, 1000000, options.frames)) {
        return std::string("--frames: expected a positive integer, got '") + v + "'";
      }
      if (arg == "--size") {
        const std::string size = v;
        const size_t x = size.find('x');
        if (x == std::string::npos || !parseInt(size.substr(0, x).c_str(), 320, 16384, options.width) ||
            !parseInt(size.substr(x + 1).c_str(), 240, 16384, options.height)) {
          return "--size: expected WIDTHxHEIGHT (at least 320x240), got '" + size + "'";
        }
      }
    } else if (arg == "--check-gl") {
      options.check_gl = true;
    } else if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (options.bundle.empty()) {
      options.bundle = arg;
    } else {
      return "unexpected argument '" + arg + "' (only one BUNDLE)";
    }
  }
  return "";
}

// $XDG_CONFIG_HOME/attnscope, else ~/.config/attnscope; "" when neither is known.
std::string configDir() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/attnscope";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.config/attnscope";
  return "";
}

std::string windowTitle(const AppState& state) {
  const AttentionTrace* t = state.trace.get();
  std::string subject;
  if (state.settings.source == InputSource::Bundle) {
    subject = "bundle " + std::filesystem::path(state.settings.bundle_path).filename().string();
  } else if (state.settings.source == InputSource::Synthetic) {
    subject = "synthetic";
  } else {
    subject = state.settings.text.substr(0, state.settings.text.find('\n'));
    if (subject.size() > 28) {
      size_t cut = 28;
      while (cut > 0 && (static_cast<unsigned char>(subject[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
      subject = subject.substr(0, cut) + "...";
    }
  }
  std::string title = "attnscope \xE2\x80\x94 " + subject;
  if (t) title += " (L=" + std::to_string(t->L) + ", H=" + std::to_string(t->H) + ")";
  return title;
}

void writeStateLog(AppState& state, int width, int height) {
  nlohmann::json line;
  const Settings& s = state.settings;
  const AttentionTrace* t = state.trace.get();
  line["generation"] = state.trace_generation;
  line["pending"] = state.posted_generation > state.trace_generation;
  line["error"] = state.error;
  line["source"] = s.source == InputSource::Text ? "text" : s.source == InputSource::Synthetic ? "synthetic" : "bundle";
  line["settings_heads"] = s.heads;
  line["mask"] = s.mask.toString();
  line["focused_head"] = s.focused_head;
  line["batch_item"] = state.textures.batch_item;
  line["colormap"] = colormapName(s.prob_colormap);
  line["log_scale"] = s.log_scale;
  line["folded_layout"] = s.folded_layout;
  line["mistake"] = mistakeName(s.mistake);
  line["busy"] = state.busy;
  line["item_active"] = state.item_active;
  line["help_open"] = state.show_help;
  line["modal_open"] = state.bundle_modal_open;
  line["selected_view"] = exportViewName(state.export_view);
  line["export_dir"] = exportFolder(s);
  line["exporting"] = exportBusy(state);
  line["export_count"] = state.export_count;
  line["last_export"] = nullptr;
  if (state.last_export) {
    line["last_export"] = {{"kind", state.last_export->kind},
                           {"paths", state.last_export->paths},
                           {"error", state.last_export->error}};
  }
  line["toast"] = nullptr;
  if (state.toast) line["toast"] = {{"text", state.toast->text}, {"error", state.toast->error}};
  if (t) {
    line["heads"] = t->H;
    line["B"] = t->B;
    line["L"] = t->L;
    line["S"] = t->S;
    line["D"] = t->D;
    line["d"] = t->d;
    line["allowed_cells"] = state.textures.allowed_cells;
    line["fully_masked_rows"] = state.textures.fully_masked_rows;
    line["components"] = nlohmann::json::array();
    for (const MaskComponent& c : t->mask.components) line["components"].push_back(c.name);
  }
  line["correct_trace"] = state.correct_trace != nullptr;
  line["diff_max"] = nullptr;  // focused head, batch item: max |buggy - correct| probability
  if (const float diff = focusedDiffMax(state); diff >= 0.0f) line["diff_max"] = diff;
  line["diff_summary"] = mistakeDiffSummary(state);
  line["hover"] = {state.hover.row, state.hover.col};
  line["window"] = {width, height};
  nlohmann::json rects = nlohmann::json::object();
  for (const auto& [name, r] : state.layout) rects[name] = {r.x, r.y, r.w, r.h};
  line["rects"] = rects;
  const std::string text = line.dump();
  if (text == state.state_log_last) return;
  state.state_log_last = text;
  std::fprintf(state.state_log, "%s\n", text.c_str());
  std::fflush(state.state_log);
}

// The rendered frame in the back buffer, top row first ([height, width] RGB).
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

// --screenshot: the window to PNG, atomically (never half a file).
bool writeScreenshot(const std::string& path, int width, int height) {
  try {
    writeFileAtomic(path, encodePng(readWindowPixels(width, height)));
    return true;
  } catch (const InputError&) {
    return false;
  }
}

void loadFonts() {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->AddFontDefault();
  if (!std::filesystem::exists(kCjkFont)) {
    std::fprintf(stderr, "attnscope: CJK font %s not found; Chinese text will show as '?'\n", kCjkFont);
    return;
  }
  ImFontConfig config;
  config.MergeMode = true;
  config.FontNo = 0;
  config.GlyphMinAdvanceX = 13.0f;
  io.Fonts->AddFontFromFileTTF(kCjkFont, 14.0f, &config, io.Fonts->GetGlyphRangesChineseSimplifiedCommon());
  ImFontConfig greek;  // proportional, unlike the CJK glyphs' minimum advance
  greek.MergeMode = true;
  io.Fonts->AddFontFromFileTTF(kCjkFont, 14.0f, &greek, kGreekGlyphs);  // the mistakes lab's "Δp"
}

void applyStyle() {
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.WindowBorderSize = 1.0f;
  style.ItemSpacing = ImVec2(8, 5);
  style.WindowPadding = ImVec2(10, 8);
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.105f, 0.12f, 1.0f);
  style.Colors[ImGuiCol_TitleBg] = ImVec4(0.14f, 0.16f, 0.20f, 1.0f);
  style.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.22f, 0.32f, 1.0f);
}

// Queued by GLFW; ImGui's own callback runs after it (it chains the one installed first).
void onKey(GLFWwindow* window, int key, int, int action, int mods) {
  auto* state = static_cast<AppState*>(glfwGetWindowUserPointer(window));
  if (action != GLFW_RELEASE) state->key_presses.push_back({key, mods});
}

void handleShortcuts(AppState& state) {
  std::vector<AppState::KeyPress> presses;
  presses.swap(state.key_presses);
  for (const AppState::KeyPress& press : presses) {
    if (press.key != GLFW_KEY_ESCAPE) continue;  // Escape closes overlays, even from a text box
    if (state.show_help) state.show_help = false;
    else state.close_modal_requested = true;
    markStateChanged(state);
  }
  if (ImGui::GetIO().WantTextInput) return;  // typing in a text box
  const bool popup_open = ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId);
  for (const AppState::KeyPress& press : presses) {
    const bool ctrl = (press.mods & GLFW_MOD_CONTROL) != 0;
    const bool shift = (press.mods & GLFW_MOD_SHIFT) != 0, alt = (press.mods & GLFW_MOD_ALT) != 0;
    if (press.key == GLFW_KEY_F1) {
      state.show_help = !state.show_help;
      markStateChanged(state);
    }
    if (ctrl && press.key == GLFW_KEY_Q) state.quit_requested = true;
    if (ctrl && press.key == GLFW_KEY_O) state.open_bundle_requested = true;
    if (ctrl && press.key == GLFW_KEY_S && !popup_open) {
      if (alt) state.screenshot_requested = true;  // read after this frame is rendered
      else requestFigureExport(state, shift ? "grid" : "view");
    }
    if (!state.trace || popup_open || ctrl) continue;
    int64_t head = state.settings.focused_head;
    if (press.key == GLFW_KEY_LEFT) head -= 1;
    if (press.key == GLFW_KEY_RIGHT) head += 1;
    if (press.key == GLFW_KEY_UP) head -= state.grid_columns;
    if (press.key == GLFW_KEY_DOWN) head += state.grid_columns;
    head = std::clamp<int64_t>(head, 0, state.trace->H - 1);
    if (head != state.settings.focused_head) {
      state.settings.focused_head = head;
      settingsEdited(state);
    }
  }
}

// Takes the worker's newest result, if any, into the state.
void receiveResult(AppState& state) {
  std::optional<ComputeResult> result = state.worker->poll();
  if (!result) return;
  state.trace_generation = result->generation;
  state.error = result->error;
  state.facts = result->facts;
  state.correct_trace = result->correct_trace;
  state.prob_diff_max = std::move(result->prob_diff_max);
  if (result->trace) {
    state.trace = result->trace;
    state.compute_ms = result->milliseconds;
  }
  // A crashed mistake run leaves only the correct trace to navigate.
  const bool crashed_with_mistake = !result->trace && state.correct_trace;
  if (const AttentionTrace* t = crashed_with_mistake ? state.correct_trace.get() : state.trace.get()) {
    state.settings.focused_head = std::clamp<int64_t>(state.settings.focused_head, 0, t->H - 1);
    state.settings.batch_item = std::clamp<int64_t>(state.settings.batch_item, 0, t->B - 1);
  }
  markStateChanged(state);
}

void saveSettingsNow(AppState& state) {
  state.settings_dirty = false;
  if (state.settings_save_path.empty()) return;
  try {
    saveSettingsFile(state.settings, state.settings_save_path);
  } catch (const InputError& e) {
    state.notice = e.what();
  }
}

}  // namespace

int runGui(int argc, char** argv) {
  Options options;
  if (const std::string error = parseOptions(argc, argv, options); !error.empty()) {
    std::fprintf(stderr, "attnscope: %s\n%s\n", error.c_str(), kUsage);
    return 2;
  }
  if (options.help) {
    std::printf("%s\n%s\n", kUsage, kHelp);
    return 0;
  }

  AppState state;
  const bool persist = options.frames < 0;  // scripted runs never touch the user's config
  const std::string config = persist ? configDir() : "";
  if (!config.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(config, ec);
    if (!ec) {
      state.settings_save_path = config + "/settings.json";
      state.ini_path = config + "/imgui.ini";
    }
  }
  if (!options.settings_file.empty()) {
    try {
      state.settings = loadSettingsFile(options.settings_file);
    } catch (const InputError& e) {
      std::fprintf(stderr, "attnscope: %s\n", e.what());
      return 1;
    }
  } else if (!state.settings_save_path.empty() && std::filesystem::exists(state.settings_save_path)) {
    try {
      state.settings = loadSettingsFile(state.settings_save_path);
    } catch (const InputError& e) {
      state.notice = std::string("saved settings ignored: ") + e.what();
    }
  }
  if (!options.bundle.empty()) {
    state.settings.source = InputSource::Bundle;
    state.settings.bundle_path = options.bundle;
  }
  if (!options.state_log.empty()) {
    state.state_log = std::fopen(options.state_log.c_str(), "a");
    if (!state.state_log) {
      std::fprintf(stderr, "attnscope: --state-log %s: cannot open (%s)\n", options.state_log.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }

  glfwSetErrorCallback(nullptr);
  if (!glfwInit()) {
    const char* why = nullptr;
    glfwGetError(&why);
    std::fprintf(stderr, "attnscope: cannot open a window (no display?): %s\n", why ? why : "glfwInit failed");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  state.window_title = windowTitle(state);
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, state.window_title.c_str(), nullptr, nullptr);
  if (!window) {
    const char* why = nullptr;
    glfwGetError(&why);
    std::fprintf(stderr, "attnscope: cannot open a window (no display?): %s\n", why ? why : "glfwCreateWindow failed");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(options.frames > 0 ? 0 : 1);
  if (!gladLoadGL(glfwGetProcAddress)) {
    std::fprintf(stderr, "attnscope: cannot load OpenGL 3.3 functions\n");
    glfwDestroyWindow(window);
    glfwTerminate();
    return 1;
  }

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = state.ini_path.empty() ? nullptr : state.ini_path.c_str();
  loadFonts();
  applyStyle();
  glfwSetWindowUserPointer(window, &state);
  glfwSetKeyCallback(window, onKey);  // before ImGui's init, which chains to it
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  if (const std::string error = createGlResources(state.gl); !error.empty()) {
    std::fprintf(stderr, "attnscope: %s\n", error.c_str());
    return 1;
  }

  state.worker = std::make_unique<ComputeWorker>();
  int exit_code = 0;
  int frames_with_result = 0;
  const auto started = std::chrono::steady_clock::now();
  int fb_width = 0, fb_height = 0;
  for (;;) {
    const bool waiting = state.posted_generation > state.trace_generation || exportBusy(state) ||
                         state.toast.has_value();
    if (options.frames > 0) glfwPollEvents();
    else glfwWaitEventsTimeout(waiting ? 0.016 : 0.1);

    receiveResult(state);
    updateExports(state);
    const bool busy = state.posted_generation > state.trace_generation &&
                      std::chrono::steady_clock::now() - state.posted_at > kSpinnerDelay;
    if (busy != state.busy) {
      state.busy = busy;
      markStateChanged(state);
    }
    updateTraceTextures(state);
    updateCorrectTextures(state);
    const std::string title = windowTitle(state);
    if (title != state.window_title) {
      state.window_title = title;
      glfwSetWindowTitle(window, title.c_str());
    }

    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    state.layout.clear();
    handleShortcuts(state);
    drawControlPanel(state);
    drawHeadGridPanel(state);
    drawFocusPanel(state);
    drawMaskPanel(state);
    drawPipelinePanel(state);
    drawStatusBar(state);
    drawHelpOverlay(state);
    drawOpenBundleModal(state);
    drawToast(state);
    ImGui::Render();

    // Recompute only when a compute-relevant setting changed (never per frame).
    if (state.control_error.empty() &&
        (state.posted_generation == 0 || computeSettingsDiffer(state.settings, state.posted_settings))) {
      state.posted_settings = state.settings;
      state.posted_generation = state.worker->post(state.settings);
      state.posted_at = std::chrono::steady_clock::now();
      markStateChanged(state);
    }
    if (state.hover_next != state.hover) markStateChanged(state);
    // A widget held by the mouse (slider drag): tests wait for its release before moving on.
    if (ImGui::IsAnyItemActive() != state.item_active) {
      state.item_active = ImGui::IsAnyItemActive();
      markStateChanged(state);
    }
    // Auto-sized windows (toast, help) settle a frame after they change: log that too.
    if (state.state_log && state.layout != state.layout_logged) {
      state.layout_logged = state.layout;
      markStateChanged(state);
    }
    state.hover = state.hover_next;
    state.hover_next = HoverCell{};

    glfwGetFramebufferSize(window, &fb_width, &fb_height);
    glViewport(0, 0, fb_width, fb_height);
    glClearColor(0.07f, 0.07f, 0.08f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    state.draw_params.clear();
    if (state.screenshot_requested) {
      state.screenshot_requested = false;
      requestScreenshotExport(state, readWindowPixels(fb_width, fb_height));
    }

    if (options.check_gl) {
      if (const GLenum gl_error = glGetError(); gl_error != GL_NO_ERROR) {
        std::fprintf(stderr, "attnscope: OpenGL error 0x%04x\n", gl_error);
        exit_code = 3;
        break;
      }
    }

    const bool settled = state.trace_generation > 0 && state.posted_generation == state.trace_generation;
    if (settled) ++frames_with_result;
    bool last_frame = glfwWindowShouldClose(window) || state.quit_requested;
    if (options.frames > 0) {
      last_frame = last_frame || (settled && frames_with_result >= options.frames);
      if (std::chrono::steady_clock::now() - started > kFramesModeTimeout) {
        std::fprintf(stderr, "attnscope: --frames: the computation did not finish in time\n");
        exit_code = 1;
        last_frame = true;
      }
    }
    if (last_frame && !options.screenshot.empty() && !writeScreenshot(options.screenshot, fb_width, fb_height)) {
      std::fprintf(stderr, "attnscope: --screenshot %s: cannot write\n", options.screenshot.c_str());
      exit_code = 1;
    }
    glfwSwapBuffers(window);

    if (state.state_log && state.state_log_pending) {
      state.state_log_pending = false;
      writeStateLog(state, fb_width, fb_height);
    }
    if (state.settings_dirty && std::chrono::steady_clock::now() - state.settings_changed_at > kSaveDelay) {
      saveSettingsNow(state);
    }
    if (last_frame) break;
  }

  if (state.state_log) {
    writeStateLog(state, fb_width, fb_height);
    std::fclose(state.state_log);
  }
  if (persist) saveSettingsNow(state);
  finishExports(state);
  state.worker.reset();
  releaseTraceTextures(state.textures);
  releaseCorrectTextures(state.correct_textures);
  destroyGlResources(state.gl);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}

}  // namespace attnscope
