// Small files the user names (settings, bundle and model JSON, a text for a model), read
// whole but never beyond a bound: /dev/zero, an endless pipe or a huge file is refused
// instead of filling memory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attnscope {

// Token label files (tokens.txt, keys.txt): millions of tokens fit; /dev/zero does not.
constexpr size_t kMaxLabelBytes = size_t{64} << 20;

// The file's bytes. InputError "PATH: <problem>" when it cannot be opened or read (a
// folder), or when it holds more than max_bytes ("larger than 16 MiB, not WHAT").
std::string readSmallFile(const std::string& path, size_t max_bytes, const std::string& what);

// The file's lines (token labels), each without its "\n" or "\r\n"; a final newline ends
// the last line, it does not add an empty one. Same bound and errors as readSmallFile.
std::vector<std::string> readLines(const std::string& path, size_t max_bytes, const std::string& what);

}  // namespace attnscope
