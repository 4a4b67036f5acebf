// The patching view's worker (app/gui/jobs/patch_worker.h) on the shipped python-code model:
// the tables of a sweep equal patchSweep's on a runner of its own, normalised as
// (patched - corrupt) / (clean - corrupt) in double; Cancel stops a sweep; a newer post
// supersedes the one before; unequal lengths and a typed token that is not one token are
// explained instead of swept.
#include "gui/jobs/patch_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "config/model_source.h"

namespace attnscope {
namespace {

const char* const kClean = "x = foo(a, b)\ny = foo(a, b";
const char* const kCorrupt = "x = foo(a, b)\ny = foo(a, q";

std::string pythonCode() {
  Settings s;
  s.source = InputSource::Model;
  s.model = "python-code";
  return modelFolder(s);
}

std::shared_ptr<const PatchResult> waitFor(PatchWorker& worker) {
  for (int i = 0; i < 60000; ++i) {
    if (auto r = worker.poll()) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return nullptr;
}

TEST(PatchWorker, TablesAreTheSweepsNormalised) {
  PatchWorker worker;
  worker.post({pythonCode(), {}, kClean, kCorrupt, ")", ","});
  const auto r = waitFor(worker);
  ASSERT_TRUE(r && r->tables) << (r ? r->why_not : "no result");
  FolderModelRunner runner(pythonCode());
  const PatchTables want = runner.patch(runner.tokenize(kClean), runner.tokenize(kCorrupt), *r->answer.token.id,
                                        *r->wrong.token.id);
  EXPECT_EQ(r->clean_tokens, 26);
  EXPECT_EQ(r->answer.label, ")");
  ASSERT_EQ(r->heads_normalised.size(), want.heads.data.size());
  ASSERT_EQ(r->resid_normalised.size(), want.resid.data.size());
  const double span = want.clean - want.corrupt;
  ASSERT_GT(std::abs(span), 1e-3);
  for (size_t k = 0; k < want.heads.data.size(); ++k)
    EXPECT_NEAR(r->heads_normalised[k], (want.heads.data[k] - want.corrupt) / span, 1e-5) << k;
  for (size_t k = 0; k < want.resid.data.size(); ++k)
    EXPECT_NEAR(r->resid_normalised[k], (want.resid.data[k] - want.corrupt) / span, 1e-5) << k;
  float largest = 1.0f;
  for (float v : r->resid_normalised) largest = std::max(largest, std::abs(v));
  for (float v : r->heads_normalised) largest = std::max(largest, std::abs(v));
  EXPECT_EQ(r->range, largest);
}

TEST(PatchWorker, CancelStopsTheSweep) {
  PatchWorker worker;
  const std::string clean(100, 'a'), corrupt = std::string(99, 'a') + "b";  // 2 x (4 + 100) patched runs
  worker.post({pythonCode(), {}, clean, corrupt, "a", "b"});
  worker.cancel();
  const auto r = waitFor(worker);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->tables);
  EXPECT_EQ(r->why_not, "cancelled: edit a text or a token, or press \"sweep again\"");
}

TEST(PatchWorker, ANewerPostSupersedes) {
  PatchWorker worker;
  worker.post({pythonCode(), {}, std::string(100, 'a'), std::string(99, 'a') + "b", "a", "b"});
  const uint64_t newer = worker.post({pythonCode(), {}, kClean, kCorrupt, ")", ","});
  const auto r = waitFor(worker);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->job, newer);
  EXPECT_EQ(r->posted_corrupt, kCorrupt);
}

TEST(PatchWorker, ExplainsWhatKeepsItFromSweeping) {
  PatchWorker worker;
  const std::string folder = pythonCode();
  const std::pair<PatchRequest, std::string> cases[] = {
      {{folder, {}, kClean, "x = 1", ")", ","},
       "the clean text has 26 tokens, the corrupt one 5: patching needs two texts of equal length"},
      {{folder, {}, kClean, kCorrupt, "ab", ","}, "answer \"ab\": it is 2 tokens of python-code's vocabulary ('a', 'b'), not one"},
      {{folder, {}, kClean, kCorrupt, ")", ""}, "pick the wrong token (from the predictions, or type it)"},
      {{folder, {}, kClean, kCorrupt, ")", ")"}, "the answer and the wrong token are the same token"},
  };
  for (const auto& [request, why] : cases) {
    worker.post(request);
    const auto r = waitFor(worker);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->why_not, why);
    EXPECT_FALSE(r->tables);
  }
}

}  // namespace
}  // namespace attnscope
