#include "gui/jobs/patch_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "gui/jobs/job_error.h"
#include "gui/jobs/job_runner.h"

namespace attnscope {
namespace {

constexpr int kWorkerNice = 10;  // as the compute worker: the UI thread comes first

PatchToken readToken(const Model& m, const std::string& typed) {
  PatchToken t;
  t.typed = typed;
  t.token = typedToken(m, typed);
  if (t.token.id) t.label = tokenLabel(m, *t.token.id);
  return t;
}

std::vector<float> normalisedCells(const Tensor& table, double clean, double corrupt) {
  std::vector<float> cells;
  for (const std::optional<double>& cell : normalisedPatchTable(table, clean, corrupt))
    cells.push_back(cell ? static_cast<float>(*cell) : std::nanf(""));
  return cells;
}

// What keeps the sweep from running, or "".
std::string whyNot(const Model& m, const PatchResult& r) {
  if (r.clean_tokens == 0 || r.corrupt_tokens == 0) return "type both texts: the clean one above, the corrupt one here";
  if (r.clean_tokens != r.corrupt_tokens)
    return "the clean text has " + std::to_string(r.clean_tokens) + " tokens, the corrupt one " +
           std::to_string(r.corrupt_tokens) + ": patching needs two texts of equal length";
  for (const PatchToken* t : {&r.answer, &r.wrong}) {
    const char* what = t == &r.answer ? "answer" : "wrong";
    if (t->typed.empty()) return std::string("pick the ") + what + " token (from the predictions, or type it)";
    if (!t->token.id) return std::string(what) + " \"" + t->typed + "\": " + notOneToken(m, t->token);
  }
  if (*r.answer.token.id == *r.wrong.token.id) return "the answer and the wrong token are the same token";
  return "";
}

}  // namespace

PatchWorker::PatchWorker()
    : jobs_([this](PatchRequest& request, const Jobs::Job& job) { return run(request, job); },
            JobOptions{JobPolicy::Latest, kWorkerNice, -1.0}) {}

PatchResult PatchWorker::run(const PatchRequest& request, const Jobs::Job& job) {
  PatchResult r;
  r.job = job.generation();
  r.posted_clean = request.clean, r.posted_corrupt = request.corrupt;
  try {
    FolderModelRunner& runner = jobRunner(runner_, request.folder, request.weights, true);
    const Model& m = runner.model();
    r.model = m.name();
    const ModelTokens clean = runner.tokenize(request.clean), corrupt = runner.tokenize(request.corrupt);
    r.clean_tokens = static_cast<int64_t>(clean.ids.size());
    r.corrupt_tokens = static_cast<int64_t>(corrupt.ids.size());
    r.clean_labels = clean.label, r.corrupt_labels = corrupt.label;
    r.answer = readToken(m, request.answer);
    r.wrong = readToken(m, request.wrong);
    r.why_not = whyNot(m, r);
    if (!r.why_not.empty()) return r;
    const auto start = std::chrono::steady_clock::now();
    const PatchTables t = runner.patch(clean, corrupt, *r.answer.token.id, *r.wrong.token.id, [&](double fraction) {
      job.progress(fraction);
      return job.keepGoing();
    });
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.layers = t.heads.dim(0), r.heads = t.heads.dim(1);
    for (int64_t l = 0; l < r.layers; ++l) r.layer_labels.push_back("L" + std::to_string(l));
    for (int64_t h = 0; h < r.heads; ++h) r.head_labels.push_back("H" + std::to_string(h));
    r.heads_normalised = normalisedCells(t.heads, t.clean, t.corrupt);
    r.resid_normalised = normalisedCells(t.resid, t.clean, t.corrupt);
    for (const std::vector<float>* cells : {&r.heads_normalised, &r.resid_normalised})
      for (float v : *cells)
        if (std::isfinite(v)) r.range = std::max(r.range, std::abs(v));
    r.tables = t;
  } catch (const Cancelled&) {
    r.cancelled = true;
    r.why_not = "cancelled: edit a text or a token, or press \"sweep again\"";
  } catch (...) {
    r.error = true;
    r.why_not = jobErrorLine("out of memory while patching; use a shorter text or a smaller model");
  }
  return r;
}

}  // namespace attnscope
