#include "cli/out_folder.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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
  std::string staging_template = (fs::path(out) / (".attnscope-" + command + "-XXXXXX")).string();
  if (!::mkdtemp(staging_template.data()))
    throw InputError("--out " + out + ": cannot write (" + std::strerror(errno) + ")");
  const fs::path staging(staging_template);
  try {
    for (const OutputFile& f : files) f.second((staging / f.first).string());
    for (const OutputFile& f : files) {
      fs::rename(staging / f.first, fs::path(out) / f.first, ec);
      if (ec) throw InputError((fs::path(out) / f.first).string() + ": cannot write (" + ec.message() + ")");
    }
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  fs::remove_all(staging, ec);
}

}  // namespace attnscope
