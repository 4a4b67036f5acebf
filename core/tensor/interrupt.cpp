#include "tensor/interrupt.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "tensor/tensor.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// Everything the watcher thread needs, behind one mutex. Once the watcher takes the mutex
// to clean up it never lets go (it ends the process), so nothing registers after that.
struct Watch {
  std::mutex mutex;
  std::map<unsigned long, std::string> paths;  // id -> file or folder to remove
  unsigned long next_id = 1;
  std::function<void(int)> handler;
};
Watch watch;

sigset_t interruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

[[noreturn]] void watchSignals(sigset_t set) {
  for (;;) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    std::function<void(int)> handler;
    {
      std::lock_guard<std::mutex> lock(watch.mutex);
      handler.swap(watch.handler);  // the handler runs once; a second signal cleans up and exits
    }
    if (handler) {
      handler(signal);
      continue;
    }
    watch.mutex.lock();  // held until _exit
    std::error_code ec;
    for (const auto& entry : watch.paths) fs::remove_all(entry.second, ec);
    ::_exit(128 + signal);
  }
}

}  // namespace

void startInterruptWatcher() {
  const sigset_t set = interruptSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(watchSignals, set).detach();
}

void setInterruptHandler(std::function<void(int)> handler) {
  std::lock_guard<std::mutex> lock(watch.mutex);
  watch.handler = std::move(handler);
}

RemoveOnInterrupt::RemoveOnInterrupt(const std::function<std::string()>& create) {
  std::lock_guard<std::mutex> lock(watch.mutex);
  path_ = create();
  id_ = watch.next_id++;
  watch.paths.emplace(id_, path_);
}

RemoveOnInterrupt::~RemoveOnInterrupt() {
  std::lock_guard<std::mutex> lock(watch.mutex);
  watch.paths.erase(id_);
}

namespace {

// Removes OUT/.PREFIX-* folders whose flock is free: their run ended without cleaning up.
void removeAbandonedStaging(const fs::path& out, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("." + prefix + "-", 0) != 0 || !it->is_directory(ec) || it->is_symlink(ec)) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code remove_ec;
      fs::remove_all(it->path(), remove_ec);
    }
    ::close(fd);
  }
}

}  // namespace

StagingFolder::StagingFolder(const std::string& out, const std::string& prefix)
    : out_(out), staging_([&] {
        removeAbandonedStaging(out, prefix);
        std::string path = (fs::path(out) / ("." + prefix + "-XXXXXX")).string();
        if (!::mkdtemp(path.data())) throw InputError(out + ": cannot write (" + std::strerror(errno) + ")");
        // The lock tells later runs that this folder is in use; it goes when the process does.
        lock_fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX | LOCK_NB);
        return path;
      }) {}

StagingFolder::~StagingFolder() {
  std::error_code ec;
  fs::remove_all(staging_.path(), ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string StagingFolder::file(const std::string& name) const { return (fs::path(staging_.path()) / name).string(); }

void StagingFolder::commit(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const fs::path target = fs::path(out_) / name;
    std::error_code ec;
    fs::rename(file(name), target, ec);
    if (ec) throw InputError(target.string() + ": cannot write (" + ec.message() + ")");
  }
}

}  // namespace attnscope
