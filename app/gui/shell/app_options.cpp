#include "gui/shell/app_options.h"

#include <cstdlib>

#include "cli/run_command.h"

namespace attnscope {
namespace {

constexpr const char* kUsage =
    "usage: attnscope [gui] [BUNDLE | MODEL] [--settings FILE] [--frames N] [--screenshot PATH] "
    "[--state-log PATH] [--size WxH] [--check-gl] [--frame-stats] [--full-redraw] [--bench-typing N]";
constexpr const char* kHelp =
    "attnscope: see multi-head attention live.\n"
    "\n"
    "  attnscope [gui] [BUNDLE] [flags]   open the desktop app (the python-code model at first, then the\n"
    "                                     saved settings; or a bundle folder)\n"
    "  attnscope [gui] MODEL [flags]      open the app on a trained model folder (config.json), a .gguf file,\n"
    "                                     hf:ORG/NAME or ollama:NAME[:TAG]\n"
    "  attnscope compute --help           compute every stage to .npy files (no display)\n"
    "  attnscope export --help            write PNG/SVG/PDF/NPY/CSV figures (no display)\n"
    "  attnscope bench --help             time a recompute against this machine's GEMM peak\n"
    "  attnscope analyze --help           head metrics, groups of similar heads, rollout, flow\n"
    "  attnscope model run --help         run a trained model folder on a text (no display)\n"
    "  attnscope diff --help              quantization drift of two files of one model (no display)\n"
    "  attnscope models --help            the models already on this machine (hf:ORG/NAME, ollama:NAME)\n"
    "\n"
    "app flags:\n"
    "  --settings FILE     start from saved settings (every export writes one beside it)\n"
    "  --frames N          render N frames after the first result, then exit (scripting)\n"
    "  --screenshot PATH   write the window to PNG after the last frame\n"
    "  --state-log PATH    append one JSON line per visible change (tests)\n"
    "  --size WxH          window size (default 1440x900)\n"
    "  --check-gl          exit 3 on any OpenGL error\n"
    "  --frame-stats       drag the temperature slider every frame (script), print mean/p95/max\n"
    "                      frame time and the first frame's time at exit\n"
    "  --full-redraw       draw the whole window every frame (default: only what changed)\n"
    "  --bench-typing N    on a model's text: type N characters at its end, edit its start N\n"
    "                      times, paste it 3 times; print each one's edit-to-maps time (median,\n"
    "                      worst) beside the engine's as one JSON line, then exit\n"
    "\n"
    "In the app, F1 lists the keyboard shortcuts.";

bool parseInt(const char* text, int low, int high, int& out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) return false;
  out = static_cast<int>(value);
  return true;
}

}  // namespace

const char* appUsage() { return kUsage; }
const char* appHelp() { return kHelp; }

namespace {

std::string parseArgs(int argc, char** argv, AppOptions& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--settings" || arg == "--screenshot" || arg == "--state-log" || arg == "--frames" ||
        arg == "--size" || arg == "--bench-typing") {
      if (i + 1 >= argc) return arg + " needs a value";
      const char* v = argv[++i];
      if (arg == "--settings") options.settings_file = v;
      if (arg == "--screenshot") options.screenshot = v;
      if (arg == "--state-log") options.state_log = v;
      if (arg == "--frames" && !parseInt(v, 1, 1000000, options.frames)) {
        return std::string("--frames: expected a positive integer, got '") + v + "'";
      }
      if (arg == "--bench-typing" && !parseInt(v, 1, 100000, options.bench_typing)) {
        return std::string("--bench-typing: expected a positive integer, got '") + v + "'";
      }
      if (arg == "--size") {
        const std::string size = v;
        const size_t x = size.find('x');
        if (x == std::string::npos || !parseInt(size.substr(0, x).c_str(), 320, 16384, options.width) ||
            !parseInt(size.substr(x + 1).c_str(), 240, 16384, options.height)) {
          return "--size: expected WIDTHxHEIGHT (at least 320x240), got '" + size + "'";
        }
        options.size_given = true;
      }
    } else if (arg == "--check-gl") {
      options.check_gl = true;
    } else if (arg == "--frame-stats") {
      options.frame_stats = true;
    } else if (arg == "--full-redraw") {
      options.full_redraw = true;
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

}  // namespace

std::string parseAppOptions(int argc, char** argv, AppOptions& options) {
  return oneLine(parseArgs(argc, argv, options));  // an argument may hold a newline
}

}  // namespace attnscope
