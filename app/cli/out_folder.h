// Output folders of the headless commands (compute, model run): checked before any work,
// written through a hidden staging folder so that a failed run leaves nothing behind.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

// InputError "--out DIR: ..." when DIR exists and is not a folder, or cannot be created or
// written; nothing is created yet.
void checkOutDir(const std::string& out);

// One output file: its name in the folder and the function that writes it to a given path.
using OutputFile = std::pair<std::string, std::function<void(const std::string& path)>>;

// Creates `out`, writes every file into a staging folder inside it and only then renames
// them into place (replacing files of the same name from an earlier run). On any failure
// or SIGINT/SIGTERM the staging folder is removed; one left by a killed run is removed by
// the next run into `out` (see StagingFolder).
void writeOutputFiles(const std::string& out, const std::string& command, const std::vector<OutputFile>& files);

}  // namespace attnscope
