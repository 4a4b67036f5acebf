#include "gui/jobs/generate_worker.h"

#include <algorithm>
#include <map>
#include <utility>

#include "gui/jobs/job_error.h"
#include "gui/jobs/job_runner.h"

namespace attnscope {
namespace {

constexpr int kWorkerNice = 10;  // as the compute worker: the UI thread comes first

bool sharesWeights(const GenerateRequest& request) {
  return request.weights.loaded() && request.weights.folder == request.folder;
}

// A generation's logit lens, column by column as its runs come: the prompt's columns when its
// whole lens fits the budget (else its last one), then each new position's (one per step:
// what every layer predicts for the token being chosen). Columns not computed stay empty.
class StepLens {
 public:
  void addTo(const FolderModelRunner& runner, const ModelRun& run, ViewModel& view) {
    const int64_t L = static_cast<int64_t>(run.tokens.ids.size());
    if (view.predictions.empty() || run.residuals.empty() || L == 0) return;
    const int64_t first = columns_.empty() ? (runner.lensFits(L) ? 0 : L - 1) : columns_.rbegin()->first + 1;
    if (first < L) {
      const LensColumns c = runner.lensColumns(run, first, L - first);
      layers_ = static_cast<int64_t>(c.cells.size()) / c.count;
      for (int64_t t = 0; t < c.count; ++t)
        for (int64_t l = 0; l < layers_; ++l) columns_[first + t].push_back(c.cells[l * c.count + t]);
    }
    LensTable& lens = view.lens;
    lens = LensTable();
    lens.layers = layers_, lens.positions = L;
    lens.cells.assign(static_cast<size_t>(layers_ * L), {});
    for (const auto& [t, column] : columns_)
      for (int64_t l = 0; l < layers_ && t < L; ++l) lens.cells[l * L + t] = column[l];
  }

 private:
  std::map<int64_t, std::vector<std::vector<TokenGuess>>> columns_;  // position -> [layers] cells
  int64_t layers_ = 0;
};

}  // namespace

GenerateWorker::GenerateWorker()
    : jobs_([this](GenerateRequest& request, const Jobs::Job& job) { return run(request, job); },
            JobOptions{JobPolicy::Latest, kWorkerNice, -1.0}) {}

void GenerateWorker::publish(GenerationSnapshot snapshot) {
  auto shared = std::make_shared<const GenerationSnapshot>(std::move(snapshot));
  std::lock_guard<std::mutex> lock(mutex_);
  published_ = std::move(shared);
}

std::shared_ptr<const GenerationSnapshot> GenerateWorker::take() {
  std::shared_ptr<const GenerationSnapshot> final_result = jobs_.poll();  // after every snapshot of its job
  std::lock_guard<std::mutex> lock(mutex_);
  if (final_result) published_.reset();
  else final_result = std::move(published_);
  return final_result;
}

GenerationSnapshot GenerateWorker::run(const GenerateRequest& request, const Jobs::Job& job) {
  GenerationSnapshot snapshot;
  snapshot.job = job.generation();
  try {
    FolderModelRunner& runner = jobRunner(runner_, request.folder, request.weights, false);
    snapshot.shared_weights = sharesWeights(request);
    runner.setCacheWindow(request.cache);
    runner.setInterventions(request.interventions);
    runner.keepResiduals(request.lens);
    StepLens step_lens;
    const ModelTokens prompt = runner.tokenize(request.text, request.truncate, request.tokens);
    if (prompt.ids.empty()) throw InputError("the prompt is empty: type at least one character");
    snapshot.prompt_length = static_cast<int64_t>(prompt.ids.size());
    snapshot.prompt_text = request.text;
    const CausalModel model = runner.causalModel(StepMaps::Keep);  // each step's view shows every layer's whole maps
    const auto on_step = [&](const GenerationStep& step) {
      snapshot.steps.push_back(step);
      snapshot.generated_text += runner.tokenText(step.id);
    };
    const auto on_run = [&](const ModelRun& run) {
      snapshot.tokens = run.tokens;
      ViewModel view = runner.viewOf(run);
      view.first_generated = snapshot.prompt_length;
      if (request.lens) step_lens.addTo(runner, run, view);
      else if (!view.predictions.empty())
        view.lens.off_reason = "open the Logit lens tab before Generate to see what each layer predicts at each step "
                               "(\"put into the text box\" shows the lens of the whole text)";
      snapshot.view = std::make_shared<const ViewModel>(std::move(view));
      snapshot.head_table =  // stamped with its view
          std::make_shared<const HeadTable>(headTableOf(*snapshot.view, 0.5, request.recent_window));
      snapshot.mass = std::make_shared<const GenerationMass>(generationMass(*snapshot.view, request.recent_window));
      publish(snapshot);
      return job.keepGoing();
    };
    snapshot.stop = generate(model, prompt, request.tokens, request.sampling, on_step, on_run).stop;
  } catch (...) {
    snapshot.error = jobErrorLine("out of memory while generating; give fewer tokens or a smaller model");
  }
  if (snapshot.stop.empty()) snapshot.stop = "error";
  if (sharesWeights(request)) runner_.reset();  // the shared weights are not held past the job
  return snapshot;
}

}  // namespace attnscope
