#include "cli/out_folder.h"

#include <unistd.h>

#include <filesystem>

#include "tensor/interrupt.h"
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
  std::vector<std::string> names;
  for (const OutputFile& f : files) {
    f.second(staging.file(f.first));
    names.push_back(f.first);
  }
  staging.commit(names);
}

}  // namespace attnscope
