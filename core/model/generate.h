// Generation through a model's KV cache (issue 21): each step appends the chosen token and
// computes only the new position's rows: one row per layer through the decode caches
// (CausalModel::step), or from that position on (run). Works for both kinds of model folders through
// CausalModel. Sampling procedure (docs/generation-and-lens.md, "attnscope model generate"):
//   greedy: the largest logit (ties: the smaller id);
//   sampling: p = softmax(logits / T) in double; ids ordered by p (ties: the smaller id first);
//   top-k keeps the first k (k = 0: all); top-p keeps the shortest prefix of those whose
//   renormalised mass reaches P (at least one id); u = (mt19937_64(seed)() >> 11) * 2^-53 picks
//   the first id whose cumulative renormalised probability exceeds u.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"

namespace attnscope {

struct SamplingSettings {
  bool greedy = true;
  double temperature = 1.0;  // > 0
  int64_t top_k = 0;         // 0 = off
  double top_p = 1.0;        // in (0, 1]; 1 = off
  uint64_t seed = 0;
};

// One id a sampling step may draw and its renormalised probability.
struct SamplingCandidate {
  int64_t id = 0;
  double p = 0.0;
};

// The distribution a sampling step draws from (the procedure above, before u): the kept ids,
// most likely first (ties: the smaller id first), with their renormalised probabilities.
std::vector<SamplingCandidate> samplingDistribution(const float* logits, int64_t V, const SamplingSettings& settings);

class TokenSampler {
 public:
  explicit TokenSampler(const SamplingSettings& settings) : settings_(settings), rng_(settings.seed) {}
  int64_t pick(const float* logits, int64_t V);  // logits [V]

 private:
  SamplingSettings settings_;
  std::mt19937_64 rng_;
};

// A causal model of either kind.
struct CausalModel {
  std::function<const ModelRun&(const ModelTokens& tokens)> run;  // through the runner's cache
  // One more position through the decode caches (a runner's step()); unset: run. A stepped
  // run's traces lack the stepped positions' maps (ModelRun::decoded_from): its rows are in
  // step_probs, which generation collects.
  std::function<const ModelRun&(const ModelTokens& tokens)> step;
  std::function<void(ModelTokens& tokens, int64_t id)> append;    // one generated token
  std::function<std::string(int64_t)> label;                      // one printable line
  int64_t context = 0;
  std::vector<int64_t> eos;  // end-of-sequence ids (none: generation stops at N or the context)
};

struct GenerationStep {
  int64_t position = 0;  // where the chosen token goes
  int64_t id = 0;
  std::string token;     // its label
  double prob = 0.0;     // softmax(logits) at temperature 1
  int64_t rank = 0;      // 1 = the model's most likely token
  std::vector<Prediction> top;  // the model's top-5 (temperature 1)
  double ms = 0.0;       // this step's run plus the choice
};

struct Generation {
  ModelRun run;                  // the final run's tokens and logits (no layers: see attentions)
  int64_t prompt_length = 0;
  std::vector<GenerationStep> steps;
  std::string stop;              // "tokens", "eos", "context" or "stopped" (on_run said so)
  // [n_layers, 1, H, L, L]: row t as the run that first computed position t gave it (the
  // prompt's rows from the first run, each generated token's row from the step after it).
  Tensor attentions;
};

// Generates up to max_new tokens after the prompt. InputError when the prompt already fills
// the context. on_step (may be empty) sees each step as it is chosen; on_run (may be empty)
// sees every run (the prompt's, then one per step, the sequence so far) and returns false to
// stop there (stop "stopped": the app's Stop button).
Generation generate(const CausalModel& model, const ModelTokens& prompt, int64_t max_new,
                    const SamplingSettings& sampling, const std::function<void(const GenerationStep&)>& on_step,
                    const std::function<bool(const ModelRun&)>& on_run = {});

// config.json's eos_token_id (a number or a list), else the tokenizer's end-of-sequence token.
std::vector<int64_t> eosIds(const Model& model);
// The causal model behind a runner (the runner must outlive it). InputError
// naming the folder for an encoder or a folder without a language-model head.
// The logits a generation reads: the last position's (generate() unembeds nothing else). A
// runner set to every row would keep the prompt's [L, V] logits (263 MiB for a 128k
// vocabulary at 512 tokens) and copy them into Generation::run.
inline const LogitRows kGenerationLogits{false, {-1}};

// maps: what each generation step leaves in the run's traces (StepMaps).
CausalModel causalModelOf(ModelRunner& runner, StepMaps maps = StepMaps::RowsOnly);

}  // namespace attnscope
