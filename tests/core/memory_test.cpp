// The memory budget (tensor/memory.h): the machine's available memory, capped by
// ATTNSCOPE_MEMORY_BYTES when set; checkMemory refuses an estimate beyond it in one line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tensor/memory.h"
#include "tensor/tensor.h"

namespace attnscope {
namespace {

// Sets the variable for one test and restores what it was.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedVariable() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string refusal(uint64_t bytes) {
  try {
    checkMemory(bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryBudget, BytesFromEnvironmentTakesPlainDecimalsOnly) {
  const struct {
    const char* text;
    std::optional<uint64_t> bytes;
  } cases[] = {{"268435456", 268435456}, {"0", 0}, {nullptr, std::nullopt}, {"", std::nullopt},
               {"1e9", std::nullopt},    {"12 ", std::nullopt}, {"abc", std::nullopt}};
  for (const auto& c : cases) {
    ScopedVariable variable("ATTNSCOPE_TEST_BYTES", c.text);
    EXPECT_EQ(bytesFromEnvironment("ATTNSCOPE_TEST_BYTES"), c.bytes) << (c.text ? c.text : "(unset)");
  }
}

TEST(MemoryBudget, CapBelowTheMachineIsTheBudget) {
  ScopedVariable cap(kMemoryBudgetVariable, "268435456");  // 256 MiB
  const std::optional<MemoryBudget> budget = memoryBudget();
  ASSERT_TRUE(budget.has_value());
  EXPECT_EQ(budget->bytes, uint64_t{268435456});
  EXPECT_TRUE(budget->capped);
  EXPECT_EQ(refusal(uint64_t{268435456}), "");  // exactly the budget fits
  EXPECT_EQ(refusal(uint64_t{1800} << 20),
            "attention for these sizes needs 1.8 GiB but the memory budget is 0.2 GiB (ATTNSCOPE_MEMORY_BYTES)");
}

TEST(MemoryBudget, CapAboveTheMachineLeavesWhatIsAvailable) {
  ScopedVariable cap(kMemoryBudgetVariable, "18000000000000000000");  // far beyond any machine
  const std::optional<MemoryBudget> budget = memoryBudget();
  ASSERT_TRUE(budget.has_value());  // Linux: /proc/meminfo
  EXPECT_FALSE(budget->capped);
  const std::string message = refusal(budget->bytes + (uint64_t{1} << 30));
  EXPECT_NE(message.find(" GiB but only "), std::string::npos) << message;
  EXPECT_NE(message.find(" GiB is available"), std::string::npos) << message;
}

TEST(MemoryBudget, WithoutCapTheBudgetIsWhatIsAvailable) {
  ScopedVariable cap(kMemoryBudgetVariable, nullptr);
  const std::optional<MemoryBudget> budget = memoryBudget();
  ASSERT_TRUE(budget.has_value());
  EXPECT_FALSE(budget->capped);
  EXPECT_GT(budget->bytes, uint64_t{0});
}

}  // namespace
}  // namespace attnscope
