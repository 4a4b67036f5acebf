#include "gui/jobs/generate_worker.h"

#include <utility>

#include "gui/jobs/job_error.h"

namespace attnscope {
namespace {

constexpr int kWorkerNice = 10;  // as the compute worker: the UI thread comes first

bool sharesWeights(const GenerateRequest& request) {
  return request.weights.loaded() && request.weights.folder == request.folder;
}

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

FolderModelRunner& GenerateWorker::runnerFor(const GenerateRequest& request) {
  if (sharesWeights(request)) {
    runner_ = std::make_unique<FolderModelRunner>(request.weights);
  } else if (!runner_ || runner_->folder() != request.folder) {
    runner_.reset();  // the old model's weights go before the new one's load
    runner_ = std::make_unique<FolderModelRunner>(request.folder);
  }
  return *runner_;
}

GenerationSnapshot GenerateWorker::run(const GenerateRequest& request, const Jobs::Job& job) {
  GenerationSnapshot snapshot;
  snapshot.job = job.generation();
  try {
    FolderModelRunner& runner = runnerFor(request);
    snapshot.shared_weights = sharesWeights(request);
    runner.setCacheWindow(request.cache);
    const ModelTokens prompt = runner.tokenize(request.text);
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
      if (view.lens.empty() && !view.predictions.empty())  // the steps keep no residuals: say where the lens is
        view.lens.off_reason = "no logit lens of a generation in the app: \"put into the text box\" shows the lens "
                               "of the whole text (`attnscope model generate --lens` writes it)";
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
