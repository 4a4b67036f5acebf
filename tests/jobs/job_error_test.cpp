// The one-line error every worker job reports (app/gui/jobs/job_error.h), per kind of exception.
#include <gtest/gtest.h>

#include <functional>
#include <new>
#include <stdexcept>

#include "gui/jobs/job_error.h"
#include "tensor/tensor.h"

namespace attnscope {
namespace {

std::string lineFor(const std::function<void()>& job) {
  try {
    job();
  } catch (...) {
    return jobErrorLine("out of memory: try less");
  }
  return "";
}

TEST(JobErrorLine, OneLinePerKindOfException) {
  const struct {
    std::function<void()> job;
    std::string line;
  } cases[] = {
      {[] { throw InputError("bundle x: bad shape"); }, "bundle x: bad shape"},
      {[] { throw std::bad_alloc(); }, "out of memory: try less"},
      {[] { throw std::logic_error("index 3 past 2"); }, "internal error: index 3 past 2"},
      {[] { throw 7; }, "internal error: an unknown exception"},
      {[] {}, ""},
  };
  for (const auto& c : cases) EXPECT_EQ(lineFor(c.job), c.line);
}

}  // namespace
}  // namespace attnscope
