// Nothing half-written survives SIGINT, SIGTERM or SIGHUP: files and folders being written
// are registered while they exist, and a watcher thread removes them before the process
// exits (exit status 128 + signal). The app installs a quit handler instead, to save and
// exit 0; the paths are then removed only if a second signal arrives.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnscope {

// Long work (heavy analyses, loading a model folder) reports progress in [0, 1] through
// this; returning false cancels it, and it throws Cancelled.
using Progress = std::function<bool(double fraction)>;

class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// Call first thing in main(), before any other thread starts: blocks the signals in this
// thread (every later thread inherits that) and starts the one thread that waits for them.
void startInterruptWatcher();

// Runs on the watcher thread for the first signal instead of removing and exiting (the
// app: request a save and quit). nullptr restores the default.
void setInterruptHandler(std::function<void(int signal)> handler);

// A path that is removed (recursively) if the process is interrupted while this lives.
// `create` makes the file or folder and returns its path; it runs under the watcher's
// lock, so a signal can never come between creating the path and registering it.
class RemoveOnInterrupt {
 public:
  explicit RemoveOnInterrupt(const std::function<std::string()>& create);
  ~RemoveOnInterrupt();
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  unsigned long id_ = 0;
};

// An output folder written all at once: files go into a hidden staging folder
// OUT/.PREFIX-XXXXXX (locked with flock while this lives, removed on interrupt) and
// commit() renames them into OUT. Staging folders of earlier runs that were killed (their
// lock is free) are removed first; those of runs still writing are left alone.
class StagingFolder {
 public:
  // Throws InputError naming `out` when the folder cannot be created.
  StagingFolder(const std::string& out, const std::string& prefix);
  ~StagingFolder();  // removes the staging folder and whatever is left in it
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;

  std::string file(const std::string& name) const;  // path inside the staging folder
  // Renames each staged file into OUT; InputError naming the file on failure.
  void commit(const std::vector<std::string>& names);

 private:
  std::string out_;
  int lock_fd_ = -1;  // before staging_: its constructor sets it
  RemoveOnInterrupt staging_;
};

}  // namespace attnscope
