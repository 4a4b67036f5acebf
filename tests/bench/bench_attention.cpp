// runAttention over growing sequence lengths (B=1, H=8, d=64, self-attention, causal),
// and the text demo's buildInputs + runAttention as the GUI does on every change.
#include <benchmark/benchmark.h>

#include "attention/attention.h"
#include "config/settings.h"

namespace attnscope {
namespace {

void BM_RunAttention(benchmark::State& state) {
  Settings s;
  s.source = InputSource::Synthetic;
  s.batch = 1;
  s.synthetic_L = s.synthetic_S = state.range(0);
  s.heads = 8;
  s.head_dim = 64;
  s.mask = MaskSpec::parse("causal");
  const AttentionInputs in = buildInputs(s);
  const AttentionOptions options = attentionOptions(s);
  for (auto _ : state) {
    AttentionTrace trace = runAttention(in, options);
    benchmark::DoNotOptimize(trace.output.data.data());
  }
  // Multiply-adds: 4 projections (L*D*D each) + Q K^T and P V (H*L*S*d each).
  const double L = static_cast<double>(state.range(0)), D = 512.0;
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * (4.0 * L * D * D + 2.0 * L * L * D),
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_RunAttention)->Arg(128)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TextDemo(benchmark::State& state) {
  const Settings s;  // the default demo sentence, 4 heads x 16
  for (auto _ : state) {
    AttentionTrace trace = runAttention(buildInputs(s), attentionOptions(s));
    benchmark::DoNotOptimize(trace.output.data.data());
  }
}
BENCHMARK(BM_TextDemo)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace attnscope
