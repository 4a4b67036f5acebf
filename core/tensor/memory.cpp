#include "tensor/memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tensor/tensor.h"

namespace attnscope {
namespace {

// "Key:   12345 kB" from a /proc file, in bytes; nullopt when the key is not there.
std::optional<uint64_t> procKiB(const char* file, const char* key) {
  std::ifstream in(file);
  const std::string prefix = std::string(key) + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str() + prefix.size(), "%llu", &kib) == 1) return static_cast<uint64_t>(kib) * 1024;
  }
  return std::nullopt;
}

// What this process may still allocate: MemAvailable, or less under a `ulimit -v`
// (RLIMIT_AS minus the address space in use); nullopt when neither is known.
std::optional<uint64_t> availableMemory() {
  std::optional<uint64_t> available = procKiB("/proc/meminfo", "MemAvailable");
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {  // `ulimit -v`
    const uint64_t used = procKiB("/proc/self/status", "VmSize").value_or(0);
    const uint64_t left = limit.rlim_cur > used ? limit.rlim_cur - used : 0;
    available = std::min(available.value_or(left), left);
  }
  return available;
}

}  // namespace

std::optional<uint64_t> bytesFromEnvironment(const char* name) {
  const char* text = std::getenv(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<MemoryBudget> memoryBudget() {
  const std::optional<uint64_t> available = availableMemory();
  const std::optional<uint64_t> cap = bytesFromEnvironment(kMemoryBudgetVariable);
  if (cap && (!available || *cap < *available)) return MemoryBudget{*cap, true};
  if (available) return MemoryBudget{*available, false};
  return std::nullopt;
}

void checkMemory(uint64_t bytes_needed, const std::string& what) {
  // Not Linux (no /proc/meminfo), no limit and no cap: nothing to compare against, the allocation decides.
  const std::optional<MemoryBudget> budget = memoryBudget();
  if (!budget || bytes_needed <= budget->bytes) return;
  const std::string needs = what + " needs " + formatGiB(bytes_needed) + " GiB";
  if (budget->capped)
    throw InputError(needs + " but the memory budget is " + formatGiB(budget->bytes) + " GiB (" +
                     kMemoryBudgetVariable + ")");
  throw InputError(needs + " but only " + formatGiB(budget->bytes) + " GiB is available");
}

std::string formatGiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1073741824.0);
  return buf;
}

}  // namespace attnscope
