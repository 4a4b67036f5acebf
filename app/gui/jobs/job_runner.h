// The model runner a worker's job runs on (generation, the patching sweep): on the weights the
// maps' worker loaded when they are the folder's (shared, never copied), else on the folder
// loaded by the worker itself, kept for its next job on the same folder.
#pragma once

#include <memory>
#include <string>

#include "model/folder_runner.h"

namespace attnscope {

// keep_shared: a runner already on these shared weights is kept (its rows serve the next job);
// otherwise a job on shared weights gets a fresh runner.
FolderModelRunner& jobRunner(std::unique_ptr<FolderModelRunner>& runner, const std::string& folder,
                             const FolderWeights& weights, bool keep_shared);

}  // namespace attnscope
