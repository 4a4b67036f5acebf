#include "gui/shell/app_window.h"

#include <glad/gl.h>
// glad before GLFW: GLFW must not pull in the system GL header first.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace attnscope {
namespace {

constexpr const char* kCjkFont = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc";
constexpr ImWchar kGreekGlyphs[] = {0x0370, 0x03FF, 0};  // must outlive the font atlas
// Visible whitespace in token labels (render/token_text.h): ↵ U+21B5, ␣ U+2423.
constexpr const char* kMarksFont = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
constexpr ImWchar kMarkGlyphs[] = {0x21B5, 0x21B5, 0x2423, 0x2423, 0};
// Emoji and symbols (monochrome, Debian's fonts-symbola): the Basic Multilingual Plane's
// symbols and dingbats, and U+FFFD, which the 16-bit ImWchar of Debian's ImGui 1.86 shows
// for any character beyond it (most emoji).
constexpr const char* kSymbolFont = "/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf";
constexpr ImWchar kSymbolGlyphs[] = {0x2600, 0x27BF, 0x2B00, 0x2B55, 0xFFFD, 0xFFFD, 0};

// The scripts a token label can hold (README, "Tokenizers"), merged after the fonts above,
// which keep the glyphs they gave: Latin Extended A/B, IPA, spacing modifiers, combining
// marks, Greek, Cyrillic (and its supplement), Hebrew, Arabic, Latin Extended Additional
// (Vietnamese), general punctuation and block elements (SentencePiece's "▁" in raw pieces)
// from DejaVu Sans (fonts-dejavu-core); Devanagari from Lohit (fonts-lohit-deva), whose tall
// line metrics need a larger size for letters as high as the Latin ones. ImGui 1.86 draws
// characters one by one, without shaping: Arabic letters show in their isolated forms,
// Devanagari without conjuncts.
constexpr ImWchar kDejaVuScripts[] = {0x0100, 0x036F, 0x0370, 0x052F, 0x0590, 0x06FF, 0x1E00, 0x1EFF,
                                      0x2000, 0x206F, 0x2580, 0x259F, 0};
constexpr ImWchar kDevanagariGlyphs[] = {0x0900, 0x097F, 0};
struct MergedFont {
  const char* path;
  const ImWchar* ranges;  // must outlive the font atlas
  float pixels;           // the size it is rasterised at
  const char* missing_note;
};
constexpr MergedFont kScriptFonts[] = {
    {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", kDejaVuScripts, 13.0f,
     "Latin Extended, Greek, Cyrillic, Hebrew and Arabic labels will show as '?'"},
    {"/usr/share/fonts/truetype/lohit-devanagari/Lohit-Devanagari.ttf", kDevanagariGlyphs, 19.0f,
     "Devanagari labels will show as '?'"},
};

// Merges `ranges` of the font file at `path` into the default font (a note when it is missing).
void mergeFont(const char* path, const ImWchar* ranges, const char* missing_note, float pixels = 13.0f) {
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "attnscope: font %s not found; %s\n", path, missing_note);
    return;
  }
  ImFontConfig config;
  config.MergeMode = true;
  ImGui::GetIO().Fonts->AddFontFromFileTTF(path, pixels, &config, ranges);
}

// The CJK font (Chinese, simplified common) and the Greek of the same file.
void mergeCjkFont() {
  ImGuiIO& io = ImGui::GetIO();
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

void loadFonts() {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->AddFontDefault();
  mergeFont(kMarksFont, kMarkGlyphs, "space and newline tokens will show as '?'");
  mergeFont(kSymbolFont, kSymbolGlyphs, "emoji will show as '?'");
  mergeCjkFont();
  for (const MergedFont& font : kScriptFonts) mergeFont(font.path, font.ranges, font.missing_note, font.pixels);
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
  if (action != GLFW_RELEASE) state->ui.key_presses.push_back({key, mods});
}

// The X server lost some of the window's pixels (an overlapping window moved away): a partial
// redraw's next frame shows all of the back buffer again.
void onRefresh(GLFWwindow* window) { static_cast<AppState*>(glfwGetWindowUserPointer(window))->gpu.redraw.exposed = true; }

// The default size shrinks to the primary monitor's work area (a 1280x800 screen, panels);
// a window manager's title bar is left room for.
void fitWorkArea(int& width, int& height) {
  GLFWmonitor* monitor = glfwGetPrimaryMonitor();
  if (!monitor) return;
  int x = 0, y = 0, w = 0, h = 0;
  glfwGetMonitorWorkarea(monitor, &x, &y, &w, &h);
  constexpr int kTitleBar = 40;
  if (w > 0) width = std::min(width, w);
  if (h > kTitleBar) height = std::min(height, h - kTitleBar);
}

std::string glfwFailure(const char* fallback) {
  const char* why = nullptr;
  glfwGetError(&why);
  return std::string("cannot open a window (no display?): ") + (why ? why : fallback);
}

}  // namespace

GLFWwindow* openAppWindow(const AppOptions& options, AppState& state, std::string& error) {
  glfwSetErrorCallback(nullptr);
  if (!glfwInit()) {
    error = glfwFailure("glfwInit failed");
    return nullptr;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  int width = options.width, height = options.height;
  if (!options.size_given) fitWorkArea(width, height);
  GLFWwindow* window = glfwCreateWindow(width, height, state.ui.window_title.c_str(), nullptr, nullptr);
  if (!window) {
    error = glfwFailure("glfwCreateWindow failed");
    glfwTerminate();
    return nullptr;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(options.frames > 0 ? 0 : 1);
  if (!gladLoadGL(glfwGetProcAddress)) {
    error = "cannot load OpenGL 3.3 functions";
    glfwDestroyWindow(window);
    glfwTerminate();
    return nullptr;
  }

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = state.persist.ini_path.empty() ? nullptr : state.persist.ini_path.c_str();
  loadFonts();
  applyStyle();
  glfwSetWindowUserPointer(window, &state);
  glfwSetKeyCallback(window, onKey);  // before ImGui's init, which chains to it
  glfwSetWindowRefreshCallback(window, onRefresh);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  error = createGlResources(state.gpu.gl);
  if (!error.empty()) {
    closeAppWindow(window, state);
    return nullptr;
  }
  choosePartialRedraw(state.gpu.redraw, options.full_redraw);
  return window;
}

void closeAppWindow(GLFWwindow* window, AppState& state) {
  destroyGpuState(state.gpu);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
}

}  // namespace attnscope
