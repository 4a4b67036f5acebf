#include "cli/out_folder.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tensor/interrupt.h"
#include "tensor/memory.h"
#include "tensor/tensor.h"

namespace attnscope {

namespace fs = std::filesystem;

void checkOutDir(const std::string& out) {
  std::error_code ec;
  fs::path probe = fs::absolute(out, ec);
  if (fs::exists(probe, ec) && !fs::is_directory(probe, ec))
    throw InputError("--out " + out + ": exists and is not a directory");
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  if (!fs::is_directory(probe, ec))
    throw InputError("--out " + out + ": cannot create the folder (" + probe.string() + " is not a directory)");
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    throw InputError("--out " + out + ": cannot write into " + probe.string() + " (permission denied)");
}

void writeOutputFiles(const std::string& out, const std::string& command, const std::vector<OutputFile>& files) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw InputError("--out " + out + ": cannot create the folder (" + ec.message() + ")");
  // Locked while it lives, removed on failure, SIGINT/SIGTERM, or by the next run after a kill.
  StagingFolder staging(out, "attnscope-" + command);
  // Test hook (tests/cli/test_interrupt.py): once the first file is staged, wait this many
  // milliseconds, so that a signal arrives mid-write every time, not only when it wins a race.
  // Unset in normal use.
  const uint64_t hold_ms = bytesFromEnvironment("ATTNSCOPE_TEST_STAGING_HOLD_MS").value_or(0);
  std::vector<std::string> names;
  for (const OutputFile& f : files) {
    f.second(staging.file(f.first));
    names.push_back(f.first);
    if (hold_ms && names.size() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  }
  staging.commit(names);
}

}  // namespace attnscope
