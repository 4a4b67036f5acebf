// The one line a worker's job reports when it throws (the app shows it where the result
// would be): an InputError's own message, the job's out-of-memory advice for std::bad_alloc,
// "internal error: ..." for anything else (a bug). Call it inside a catch (...) block.
#pragma once

#include <string>

namespace attnscope {

std::string jobErrorLine(const std::string& out_of_memory);

}  // namespace attnscope
