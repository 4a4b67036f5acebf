// The app's command line: attnscope [gui] [BUNDLE | MODEL] [--settings FILE] [--frames N]
// [--screenshot PATH] [--state-log PATH] [--size WxH] [--check-gl] [--frame-stats] [--full-redraw]
// [--bench-typing N].
#pragma once

#include <string>

namespace attnscope {

struct AppOptions {
  std::string bundle;  // a bundle or a model folder (config.json)
  std::string settings_file;
  std::string screenshot;
  std::string state_log;
  int frames = -1;  // -1: run until the user quits
  int width = 1440, height = 900;
  bool size_given = false;  // --size: exactly that; else the default shrinks to the monitor's work area
  bool check_gl = false;
  bool frame_stats = false;  // --frame-stats: scripted slider drag, frame times printed at exit
  bool full_redraw = false;  // --full-redraw: draw the whole window every frame (gui/redraw.h)
  int bench_typing = 0;      // --bench-typing N: the scripted typing benchmark (shell/typing_bench.h); 0 = off
  bool help = false;
};

// Returns "" on success, else the one-line error (print it with appUsage(), exit 2).
std::string parseAppOptions(int argc, char** argv, AppOptions& options);
const char* appUsage();
const char* appHelp();

}  // namespace attnscope
