#include "model/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>


#include "tokenizer/tokenizer.h"

namespace attnscope {
namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Row i of every layer's map [H, L, L], keys 0..i (a causal row has nothing after i), as
// the run that first computed it gave it, written straight into the result [n_layers, 1, H,
// L, L] with rows `cap` floats apart (cap: the sequence's length at the end, at most about twice
// the prompt's to begin with; doubled, up to `limit`, when a run is longer), then moved together in place: no second copy of the maps (a Llama-3.2-1B-sized
// model at 512 tokens: 270 MiB of rows beside the 540 MiB result before). A row's pages are
// touched when it is written.
class RowCollector {
 public:
  RowCollector(int64_t cap, int64_t limit) : cap_(std::max<int64_t>(cap, 1)), limit_(limit) {}
  void add(const ModelRun& run) {
    const int64_t L = static_cast<int64_t>(run.tokens.ids.size());
    if (!run.mapsKept())  // beyond the runner's maps budget (ModelRunner::keepMapsWithin)
      throw InputError("generation keeps every layer's attention rows, but at " + std::to_string(L) +
                       " tokens the maps are beyond the full path's budget (ATTNSCOPE_FULL_PATH_BYTES) and are shown "
                       "in tiles: generate from a shorter text");
    if (out_.data.empty()) {
      H_ = run.layers.front().H;
      slices_ = static_cast<int64_t>(run.layers.size()) * H_;
    }
    if (out_.data.empty() || L > cap_) relayout(std::max(L, out_.data.empty() ? cap_ : std::min(2 * cap_, limit_)));
    const bool stepped = run.decoded_from >= 0;  // one new row, in step_probs [N, H, L]
    for (; have_ < L; ++have_)
      for (int64_t m = 0; m < slices_; ++m) {  // m = layer * H + h
        const float* row = stepped ? &run.step_probs.data[m * L] : &run.layers[m / H_].probs.data[((m % H_) * L + have_) * L];
        float* to = &out_.data[(m * cap_ + have_) * cap_];
        std::copy_n(row, have_ + 1, to);
        std::fill(to + have_ + 1, to + cap_, 0.0f);
      }
  }
  Tensor stack() {  // [n_layers, 1, H, L, L]: each row moved to its place (never past its source)
    const int64_t L = have_;
    for (int64_t m = 0; m < slices_; ++m)
      for (int64_t i = 0; i < L; ++i)
        std::memmove(&out_.data[(m * L + i) * L], &out_.data[(m * cap_ + i) * cap_], static_cast<size_t>(L) * sizeof(float));
    out_.data.resize(static_cast<size_t>(slices_ * L * L));
    out_.shape = {slices_ / std::max<int64_t>(H_, 1), 1, H_, L, L};
    return std::move(out_);
  }

 private:
  // Rows `cap` apart from now on (the rows so far copied over).
  void relayout(int64_t cap) {
    FloatBuffer wider(static_cast<size_t>(slices_ * cap * cap));  // unset: pages touched as rows are written
    for (int64_t m = 0; m < slices_; ++m)
      for (int64_t i = 0; i < have_; ++i) {
        float* to = &wider[(m * cap + i) * cap];
        std::copy_n(&out_.data[(m * cap_ + i) * cap_], i + 1, to);
        std::fill(to + i + 1, to + cap, 0.0f);
      }
    out_.data = std::move(wider);
    cap_ = cap;
  }
  int64_t H_ = 0, slices_ = 0, have_ = 0, cap_, limit_;
  Tensor out_;  // [slices, cap, cap] while collecting
};

// The step that chose `id` after position `row`, from that position's logits [V].
GenerationStep describe(const CausalModel& model, const float* logits, int64_t V, int64_t row, int64_t id) {
  const std::vector<double> p = nextTokenProbs(logits, V);
  GenerationStep step;
  step.position = row + 1;
  step.id = id;
  step.token = model.label(id);
  step.prob = p[id];
  step.rank = 1;
  for (size_t j = 0; j < p.size(); ++j)
    if (p[j] > p[id] || (p[j] == p[id] && static_cast<int64_t>(j) < id)) ++step.rank;
  for (int64_t t : topIds(p, 5)) step.top.push_back({t, model.label(t), p[t]});
  return step;
}

}  // namespace

std::vector<SamplingCandidate> samplingDistribution(const float* logits, int64_t V, const SamplingSettings& settings) {
  const double top = *std::max_element(logits, logits + V);
  std::vector<double> p(V);
  for (int64_t v = 0; v < V; ++v) p[v] = std::exp((logits[v] - top) / settings.temperature);
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  int64_t keep = settings.top_k > 0 ? std::min(settings.top_k, V) : V;
  auto mass = [&](int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += p[order[i]];
    return sum;
  };
  if (settings.top_p < 1.0) {
    const double total = mass(keep);
    double cumulative = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
      cumulative += p[order[i]] / total;
      if (cumulative >= settings.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  const double total = mass(keep);
  std::vector<SamplingCandidate> kept(keep);
  for (int64_t i = 0; i < keep; ++i) kept[i] = {order[i], p[order[i]] / total};
  return kept;
}

int64_t TokenSampler::pick(const float* logits, int64_t V) {
  if (settings_.greedy) return std::max_element(logits, logits + V) - logits;  // first maximum: the smaller id
  const std::vector<SamplingCandidate> kept = samplingDistribution(logits, V, settings_);
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double cumulative = 0.0;
  for (const SamplingCandidate& c : kept) {
    cumulative += c.p;
    if (u < cumulative) return c.id;
  }
  return kept.back().id;
}

Generation generate(const CausalModel& model, const ModelTokens& prompt, int64_t max_new,
                    const SamplingSettings& sampling, const std::function<void(const GenerationStep&)>& on_step,
                    const std::function<bool(const ModelRun&)>& on_run) {
  const int64_t P = static_cast<int64_t>(prompt.ids.size());
  if (P >= model.context)
    throw InputError("the prompt has " + std::to_string(P) + " tokens and the model's context is " +
                     std::to_string(model.context) + ": no room to generate");
  Generation g;
  g.prompt_length = P;
  g.stop = "tokens";
  ModelTokens tokens = prompt;
  TokenSampler sampler(sampling);
  const int64_t end = std::min(P + std::max<int64_t>(max_new, 0), model.context);  // unless EOS comes first
  RowCollector rows(std::min(end, 2 * P + 64), end);
  auto start = std::chrono::steady_clock::now();
  const ModelRun* run = &model.run(tokens);
  double run_ms = msSince(start);
  rows.add(*run);
  const auto go_on = [&] { return !on_run || on_run(*run); };
  if (!go_on()) g.stop = "stopped";
  for (int64_t step = 0; step < max_new && g.stop != "stopped"; ++step) {
    const int64_t L = static_cast<int64_t>(tokens.ids.size());
    if (L >= model.context) {
      g.stop = "context";
      break;
    }
    start = std::chrono::steady_clock::now();
    const int64_t V = run->logits.vocab();
    const float* last = run->logits.row(L - 1);  // generation unembeds the last position
    const int64_t id = sampler.pick(last, V);
    GenerationStep chosen = describe(model, last, V, L - 1, id);
    chosen.ms = run_ms + msSince(start);
    model.append(tokens, id);
    if (on_step) on_step(chosen);
    g.steps.push_back(std::move(chosen));
    // The next step's logits, or the last token's own rows: one more position per layer.
    start = std::chrono::steady_clock::now();
    run = model.step ? &model.step(tokens) : &model.run(tokens);
    run_ms = msSince(start);
    rows.add(*run);
    if (std::find(model.eos.begin(), model.eos.end(), id) != model.eos.end()) {
      g.stop = "eos";
      go_on();  // the last run is still seen
      break;
    }
    if (!go_on()) g.stop = step + 1 < max_new ? "stopped" : g.stop;
  }
  g.run.tokens = run->tokens;
  g.run.logits = run->logits;
  g.run.first_computed = run->first_computed;
  g.attentions = rows.stack();
  return g;
}

std::vector<int64_t> eosIds(const Model& model) {
  std::vector<int64_t> eos = model.config.eos_ids;
  if (eos.empty() && model.tokenizer && model.tokenizer->eosId()) eos.push_back(*model.tokenizer->eosId());
  return eos;
}

CausalModel causalModelOf(ModelRunner& runner, StepMaps maps) {
  const Model& model = runner.model();
  if (!model.config.family->causal)
    throw InputError(model.folder + ": " + model.config.model_type + " is an encoder: generation needs a causal model");
  if (!model.hasHead()) throw InputError(model.folder + ": no language-model head to generate with");
  CausalModel m;
  m.run = [&runner](const ModelTokens& tokens) -> const ModelRun& { return runner.run(tokens); };
  m.step = [&runner, maps](const ModelTokens& tokens) -> const ModelRun& { return runner.step(tokens, maps); };
  m.append = [&model](ModelTokens& tokens, int64_t id) {
    const ModelTokens one = tokensFromIds(model, {id});
    tokens.ids.push_back(id);
    tokens.text.push_back(one.text[0]);
    tokens.unknown.push_back(one.unknown[0]);
    if (!tokens.source.empty()) tokens.source.emplace_back();
    // A new piece can finish a character begun before it: the labels are the sequence's.
    tokens.label = tokenLabels(model, tokens.ids);
  };
  m.label = [&model](int64_t id) { return tokenLabel(model, id); };
  m.context = model.context();
  m.eos = eosIds(model);
  return m;
}

}  // namespace attnscope
