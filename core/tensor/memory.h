// How much memory a run may take, and the one check every large allocation goes through
// before it allocates: estimate the bytes, then checkMemory(estimate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attnscope {

// The environment variable that caps the memory budget, in bytes ("268435456" = 256 MiB).
// The fuzz harness sets it so that no input can reach its RSS limit; a user may set it to
// keep a run well inside a shared machine's memory.
constexpr const char* kMemoryBudgetVariable = "ATTNSCOPE_MEMORY_BYTES";

// A byte count from the environment variable `name`: nullopt when it is unset or not a
// plain decimal number.
std::optional<uint64_t> bytesFromEnvironment(const char* name);

// The memory budget: what this process may still allocate (MemAvailable from /proc/meminfo,
// or less under a `ulimit -v`: RLIMIT_AS minus the address space in use), capped by
// ATTNSCOPE_MEMORY_BYTES when set. nullopt when nothing is known (not Linux, no limit).
struct MemoryBudget {
  uint64_t bytes = 0;
  bool capped = false;  // ATTNSCOPE_MEMORY_BYTES is what limits it
};
std::optional<MemoryBudget> memoryBudget();

// Throws InputError when bytes_needed exceeds the budget: "WHAT needs 12.3 GiB but only
// 4.0 GiB is available", or with the cap "WHAT needs 1.6 GiB but the memory budget is
// 0.2 GiB (ATTNSCOPE_MEMORY_BYTES)".
void checkMemory(uint64_t bytes_needed, const std::string& what = "attention for these sizes");

// "12.3": bytes in GiB with one decimal.
std::string formatGiB(uint64_t bytes);

}  // namespace attnscope
