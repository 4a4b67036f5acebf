// Every CLI value parser, through the real commands: the input is argv (NUL-separated; the
// first byte picks compute, export, analyze, model, bench or the app's own options), always
// with an --out that cannot be created, so nothing is written. The contract of
// cli/commands.h must hold: exit 0, 1 or 2, and on failure exactly one line on stderr,
// never an "internal error". bench always gets --threads 0, which it refuses after parsing
// every other value and before timing anything. The memory budget is capped at 16 MiB
// (ATTNSCOPE_MEMORY_BYTES, tensor/memory.h): larger runs are refused from their estimate
// before they allocate, so no input reaches fuzz.sh's 2 GiB RSS limit or its 10 s timeout
// (seed analyze_beyond_budget: --heads 641 makes D = 10256, 1.7 GB of weights). Under the
// fuzzer's instrumentation the row GEMM's packing of weights runs about 60x slower than in a
// release build: `export --demo --heads-count 251` (0.2 GiB) took 17.8 s at 256 MiB.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fuzz_util.h"
#include "gui/shell/app_options.h"
#include "tensor/memory.h"

namespace {

attnscope::fuzz::Scratch scratch;

const char* const kCommands[] = {"compute", "export", "analyze", "model", "bench", "gui"};

bool isFlag(const std::string& arg, const std::string& flag) { return arg == flag || arg.rfind(flag + "=", 0) == 0; }

[[noreturn]] void broken(const std::string& command, int code, const std::string& message) {
  std::fprintf(stderr, "contract broken by %s: exit %d, stderr: %s\n", command.c_str(), code, message.c_str());
  std::abort();
}

int runCommand(const std::string& command, int argc, char** argv) {
  if (command == "compute") return attnscope::runComputeCommand(argc, argv);
  if (command == "export") return attnscope::runExportCommand(argc, argv);
  if (command == "analyze") return attnscope::runAnalyzeCommand(argc, argv);
  if (command == "model") return attnscope::runModelCommand(argc, argv);
  return attnscope::runBenchCommand(argc, argv);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv(attnscope::kMemoryBudgetVariable, "16777216", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const std::filesystem::path& dir = scratch.fresh();
  const std::string blocker = (dir / "file").string();  // --out below a plain file: never created
  attnscope::fuzz::Scratch::write(blocker, data, 0);

  const std::string command = kCommands[data[0] % (sizeof kCommands / sizeof kCommands[0])];
  std::vector<std::string> args = {command};
  std::string arg;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == '\0') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  args.push_back(arg);
  for (const std::string& a : args) {
    if (isFlag(a, "--out") || isFlag(a, "--settings") || isFlag(a, "--threads") || isFlag(a, "--screenshot") ||
        isFlag(a, "--state-log"))
      return 0;
  }
  if (command == "bench") {
    args.insert(args.end(), {"--threads", "0"});
  } else if (command != "gui") {
    args.insert(args.end(), {"--out", blocker + "/out"});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(args.size());

  if (command == "gui") {  // the app's own flags: "" or one line, nothing opened
    attnscope::AppOptions options;
    const std::string error = attnscope::parseAppOptions(argc, argv.data(), options);
    if (error.find('\n') != std::string::npos) broken(command, 2, error);
    return 0;
  }
  std::ostringstream out, err;
  std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = runCommand(command, argc, argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);

  const std::string message = err.str();
  const bool one_line = !message.empty() && message.find('\n') == message.size() - 1;
  // "attnscope COMMAND: internal error: ..." (the user's own text may say anything later on,
  // and may itself start with those words: a bundle path "internal error" is named first)
  const size_t colon = message.find(": ");
  const bool user_said_it = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.find("internal error") != std::string::npos;
  });
  const bool internal = !user_said_it && colon != std::string::npos &&
                        message.compare(colon + 2, 16, "internal error: ") == 0;
  if (code < 0 || code > 2 || (code != 0 && !one_line) || internal) broken(command, code, message);
  return 0;
}
