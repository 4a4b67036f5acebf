// `attnscope bench --model FOLDER [--tokens 128,512,1024] [--generate N] [--json]`: a model
// folder of either kind on random token ids (seeded), per size: the load, a full forward
// keeping every layer's maps (logits of the last position, or all with --logits all), one
// appended token through the KV cache, the peak RSS; with
// --generate N, the median time per generated token (greedy) after a prompt of that size;
// with --typing N, N tokens appended one by one after a run on L (median and slowest); with
// --rerun N, the median of N more full forwards, each on another text of length L (every row
// computed again into the maps' storage of the run before, as when the app's whole text is
// replaced: what a peer timed after a warm-up is compared with); with --ablate SPEC, the run
// that toggles the ablation on after a run on L (to the new predictions: it recomputes from the
// ablated layer on), beside the appended token; with --patch, the full activation-patching
// sweep on L (every head, then every layer and position: N H + N L patched runs); with
// --sweep zero|mean, the ablation sweep at the last position (each head alone).
#include "cli/bench_model.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/model_generate.h"
#include "cli/run_command.h"

namespace attnscope {
namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double peakRss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

std::vector<int64_t> parseTokenSizes(const std::string& text) {
  std::vector<int64_t> sizes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || n < 2) throw UsageError("--tokens: '" + item + "' is not a length >= 2");
    sizes.push_back(n);
  }
  if (sizes.empty()) throw UsageError("--tokens: empty list");
  return sizes;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The median of n full forwards after a run on ids[0, L), each on another text of length L:
// every id moved by 1 to V - 1, so every row is computed again (into the run's storage).
double rerunMs(Loaded& m, const std::vector<int64_t>& ids, int64_t L, int64_t n) {
  std::vector<double> times;
  for (int64_t k = 1; k <= n; ++k) {
    const int64_t shift = 1 + (k - 1) % std::max<int64_t>(m.vocab - 1, 1);
    std::vector<int64_t> other(ids.begin(), ids.begin() + L);
    for (int64_t& id : other) id = (id + shift) % m.vocab;
    const ModelTokens text = m.from_ids(other);
    const auto start = std::chrono::steady_clock::now();
    m.model.run(text);
    times.push_back(msSince(start));
  }
  return median(times);
}

// Up to n greedy tokens after `prompt` (EOS ignored, each run unembedding its last row, as
// `model generate`): the tokens generated and the median time per token, the first step
// (which includes the prompt's forward) left out.
std::pair<size_t, double> generationStepMs(Loaded& m, const ModelTokens& prompt, int64_t n) {
  m.reset();
  m.logit_rows(kGenerationLogits);
  m.keep_scores(false);  // as `model generate`
  const int64_t room = std::min<int64_t>(n, m.model.context - static_cast<int64_t>(prompt.ids.size()));
  CausalModel no_eos = m.model;
  no_eos.eos.clear();
  const Generation g = generate(no_eos, prompt, std::max<int64_t>(room, 1), SamplingSettings{}, {});
  std::vector<double> step_ms;
  for (size_t s = 1; s < g.steps.size(); ++s) step_ms.push_back(g.steps[s].ms);
  m.keep_scores(true);
  return {g.steps.size(), median(step_ms)};
}

// A run on ids[0, L), then n tokens appended one at a time, as the app's runs while typing
// (the last position unembedded): each one's time.
std::vector<double> typingMs(Loaded& m, const std::vector<int64_t>& ids, int64_t L, int64_t n) {
  m.reset();
  m.logit_rows(LogitRows{false, {-1}});
  m.model.run(m.from_ids(std::vector<int64_t>(ids.begin(), ids.begin() + L)));
  std::vector<double> times;
  for (int64_t k = L + 1; k <= L + n; ++k) {
    const ModelTokens typed = m.from_ids(std::vector<int64_t>(ids.begin(), ids.begin() + k));
    const auto start = std::chrono::steady_clock::now();
    m.model.run(typed);
    times.push_back(msSince(start));
  }
  return times;
}

// After a run on `tokens` (the last position unembedded, as the app), the run with `ablate`
// switched on: the ablation's time to new predictions (median of 3, switched off and run
// again between them). The ablation is left off.
double ablateMs(Loaded& m, const ModelTokens& tokens, const Interventions& ablate) {
  m.reset();
  m.logit_rows(LogitRows{false, {-1}});
  m.set_interventions({});
  m.model.run(tokens);
  std::vector<double> times;
  for (int k = 0; k < 3; ++k) {
    m.set_interventions(ablate);
    const auto start = std::chrono::steady_clock::now();
    m.model.run(tokens);
    times.push_back(msSince(start));
    m.set_interventions({});
    m.model.run(tokens);
  }
  return median(times);
}

// The full sweep on `tokens` as the clean text, the corrupt one with its middle token changed,
// answer and wrong the first two ids of the vocabulary.
void addPatchFields(Loaded& m, const ModelTokens& tokens, nlohmann::ordered_json& r) {
  std::vector<int64_t> ids = tokens.ids;
  ids[ids.size() / 2] = (ids[ids.size() / 2] + 1) % m.vocab;
  const ModelTokens corrupt = m.from_ids(ids);
  m.reset();
  const auto start = std::chrono::steady_clock::now();
  m.patch(tokens, corrupt, 0, std::min<int64_t>(1, m.vocab - 1));
  const double ms = msSince(start);
  const int64_t runs = m.n_layers * (m.heads + static_cast<int64_t>(ids.size()));
  r["patched_runs"] = runs;
  r["patch_ms"] = ms;
  r["patch_run_ms"] = ms / static_cast<double>(runs);
}

void printHeader(const BenchModelFlags& flags, const std::string& name) {
  std::printf("attnscope bench --model %s\n%7s %9s %11s %10s %9s%s%s%s%s%s%s\n", name.c_str(), "L", "load_ms", "forward_ms",
              "append_ms", "peak_rss", flags.generate ? "   step_ms" : "", flags.typing ? "  typing_ms (median / max)" : "",
              flags.rerun ? "  rerun_ms" : "", flags.ablate.empty() ? "" : "  ablate_ms (x append)",
              flags.patch ? "  patch_ms (runs, ms per run)" : "", flags.sweep.empty() ? "" : "  sweep_ms");
}

void printRow(const BenchModelFlags& flags, const nlohmann::ordered_json& r) {
  std::printf("%7ld %9.1f %11.1f %10.1f %6.0f MB", static_cast<long>(r["L"].get<int64_t>()), r["load_ms"].get<double>(),
              r["forward_ms"].get<double>(), r["append_ms"].get<double>(), r["peak_rss_mb"].get<double>());
  if (flags.generate) std::printf(" %9.1f", r["step_ms"].get<double>());
  if (flags.typing) std::printf("  %9.1f / %.1f", r["typing_median_ms"].get<double>(), r["typing_max_ms"].get<double>());
  if (flags.rerun) std::printf("  %8.1f", r["rerun_ms"].get<double>());
  if (!flags.ablate.empty()) std::printf("  %9.1f (%.2fx)", r["ablate_ms"].get<double>(), r["ablate_vs_append"].get<double>());
  if (flags.patch)
    std::printf("  %8.1f (%ld, %.2f)", r["patch_ms"].get<double>(), static_cast<long>(r["patched_runs"].get<int64_t>()),
                r["patch_run_ms"].get<double>());
  if (!flags.sweep.empty()) std::printf("  %8.1f", r["sweep_ms"].get<double>());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int benchModel(const BenchModelFlags& flags) {
  const std::vector<int64_t> sizes = parseTokenSizes(flags.tokens);
  if (flags.generate && *flags.generate < 1) throw UsageError("--generate must be at least 1");
  if (flags.typing && *flags.typing < 1) throw UsageError("--typing must be at least 1");
  if (flags.rerun && *flags.rerun < 1) throw UsageError("--rerun must be at least 1");
  const auto load_start = std::chrono::steady_clock::now();
  Loaded m = loadCausalModel(flags.model);
  const double load_ms = msSince(load_start);
  const Interventions ablate = parseInterventions(flags.ablate, "");  // InputError naming the bad item
  if (!flags.ablate.empty()) {  // InputError for a layer or head outside the model, before any timing
    m.set_interventions(ablate);
    m.set_interventions({});
  }
  for (int64_t L : sizes)
    if (L + flags.typing.value_or(0) > m.model.context)
      throw InputError("--tokens " + std::to_string(L) + (flags.typing ? " + --typing " + std::to_string(*flags.typing) : "") +
                       ": " + m.name + "'s context is " + std::to_string(m.model.context));
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  if (!flags.json) printHeader(flags, m.name);
  std::mt19937_64 rng(42);
  for (int64_t L : sizes) {
    std::vector<int64_t> ids(L + flags.typing.value_or(0));
    for (int64_t& id : ids) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.vocab));
    const ModelTokens tokens = m.from_ids(std::vector<int64_t>(ids.begin(), ids.begin() + L));
    ModelTokens shorter = tokens;
    for (auto* column : {&shorter.text, &shorter.label}) column->pop_back();
    shorter.ids.pop_back();
    shorter.unknown.pop_back();
    m.reset();
    m.logit_rows(flags.logits == "all" ? LogitRows{} : LogitRows{false, {-1}});
    auto start = std::chrono::steady_clock::now();
    m.model.run(tokens);  // every row: a full forward, all maps kept
    const double forward_ms = msSince(start);
    m.model.run(shorter);
    start = std::chrono::steady_clock::now();
    m.model.run(tokens);  // one more position through the cache
    const double append_ms = msSince(start);
    nlohmann::ordered_json r = {{"model", m.name}, {"L", L}, {"load_ms", load_ms}, {"forward_ms", forward_ms},
                                {"append_ms", append_ms}};
    if (flags.rerun) {
      r["reruns"] = *flags.rerun;
      r["rerun_ms"] = rerunMs(m, ids, L, *flags.rerun);
    }
    if (flags.generate) {
      const auto [generated, step_ms] = generationStepMs(m, L < m.model.context ? tokens : shorter, *flags.generate);
      r["generated"] = generated;
      r["step_ms"] = step_ms;
    }
    if (flags.typing) {
      const std::vector<double> typing_ms = typingMs(m, ids, L, *flags.typing);
      r["typed"] = *flags.typing;
      r["typing_median_ms"] = median(typing_ms);
      r["typing_max_ms"] = *std::max_element(typing_ms.begin(), typing_ms.end());
    }
    if (!flags.ablate.empty()) {
      r["ablate"] = flags.ablate;
      r["ablate_ms"] = ablateMs(m, tokens, ablate);
      r["ablate_vs_append"] = r["ablate_ms"].get<double>() / std::max(append_ms, 1e-6);
    }
    if (flags.patch) addPatchFields(m, tokens, r);
    if (!flags.sweep.empty()) {
      const auto start = std::chrono::steady_clock::now();
      m.sweep(tokens, flags.sweep == "mean" ? AblationMode::Mean : AblationMode::Zero);
      r["sweep"] = flags.sweep;
      r["sweep_ms"] = msSince(start);
    }
    r["peak_rss_mb"] = peakRss();
    if (!flags.json) printRow(flags, r);
    results.push_back(r);
  }
  if (flags.json) std::cout << results.dump(2) << "\n";
  return 0;
}

}  // namespace attnscope
