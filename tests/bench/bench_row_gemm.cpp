// The row GEMM (attention/row_gemm.h) on a model's linear-map shapes, float32 and BF16
// weights in panels (a model's layout), float32 in nn.Linear's layout (packed per call), beside OpenBLAS's sgemm on the same product (one whole call, and the 64-row
// calls a bit-for-bit grid would make): M rows, N outputs, K inputs; GFLOP/s counters. And a
// head's 64-row block of scores (scoreRows, K^T transposed or not) and of context
// (combineRowBlock) at GPT-2's head width, one thread as attention runs them.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "attention/row_gemm.h"
#include "tensor/weights.h"

namespace attnscope {
namespace {

struct Operands {
  std::vector<float> x, y;
  Weights w32, w16, rows32;  // w32, w16 in panels; rows32 [N, K]
  Operands(int64_t M, int64_t N, int64_t K) : x(M * K), y(M * N) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    w32.shape = w16.shape = {N, K};
    for (int64_t n = 0; n < N * K; ++n) {
      const float v = normal(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      w16.bf16.push_back(static_cast<uint16_t>(bits >> 16));
      w32.f32.push_back(bf16ToFloat(w16.bf16.back()));
    }
    rows32 = w32;
    packPanels(w32);
    packPanels(w16);
  }
};

void rate(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * state.range(0) * state.range(1) * state.range(2),
                                                 benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_RowGemmF32(benchmark::State& state) {
  Operands o(state.range(0), state.range(1), state.range(2));
  for (auto _ : state) rowGemm(o.x.data(), state.range(0), o.w32.rows(), nullptr, o.y.data());
  rate(state);
}

void BM_RowGemmBf16(benchmark::State& state) {
  Operands o(state.range(0), state.range(1), state.range(2));
  for (auto _ : state) rowGemm(o.x.data(), state.range(0), o.w16.rows(), nullptr, o.y.data());
  rate(state);
}

void BM_RowGemmF32Unpacked(benchmark::State& state) {
  Operands o(state.range(0), state.range(1), state.range(2));
  for (auto _ : state) rowGemm(o.x.data(), state.range(0), o.rows32.rows(), nullptr, o.y.data());
  rate(state);
}

void BM_OpenBlasWhole(benchmark::State& state) {
  const int M = static_cast<int>(state.range(0)), N = static_cast<int>(state.range(1)), K = static_cast<int>(state.range(2));
  Operands o(M, N, K);
  for (auto _ : state)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, o.x.data(), K, o.rows32.f32.data(), K, 0.0f,
                o.y.data(), N);
  rate(state);
}

void BM_OpenBlas64RowBlocks(benchmark::State& state) {
  const int M = static_cast<int>(state.range(0)), N = static_cast<int>(state.range(1)), K = static_cast<int>(state.range(2));
  Operands o(M, N, K);
  for (auto _ : state)
    for (int i0 = 0; i0 < M; i0 += 64)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, std::min(64, M - i0), N, K, 1.0f, &o.x[i0 * K], K,
                  o.rows32.f32.data(), K, 0.0f, &o.y[i0 * N], N);
  rate(state);
}

// Llama-3.2-1B's q/o and MLP shapes at 512 tokens, GPT-2 small's MLP at 1024, one generated
// row, GPT-2's output head on a 64-row block of logits.
void shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 2048, 2048})->Args({512, 8192, 2048})->Args({512, 2048, 8192})->Args({1024, 3072, 768})
      ->Args({1024, 768, 3072})->Args({1, 8192, 2048})->Args({64, 50257, 768})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_RowGemmF32)->Apply(shapes);
BENCHMARK(BM_RowGemmBf16)->Apply(shapes);
BENCHMARK(BM_RowGemmF32Unpacked)->Apply(shapes);
BENCHMARK(BM_OpenBlasWhole)->Apply(shapes);
BENCHMARK(BM_OpenBlas64RowBlocks)->Apply(shapes);

// A 64-row block of one head's scores against N keys of width 64 (the flops of a full block).
void BM_ScoreRows(benchmark::State& state) {
  const int64_t M = 64, N = state.range(0), K = 64;
  const bool transposed = state.range(1) != 0;
  Operands o(M, N, K);
  const KeysT kt = transposeKeys(o.rows32.f32.data(), N, K);
  for (auto _ : state) scoreRows(o.x.data(), K, M, o.rows32.f32.data(), transposed ? &kt : nullptr, 0, N, K, o.y.data(), N);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ScoreRows)->Args({1024, 1})->Args({1024, 0});

// The context of a 64-row block over N keys each, width 64.
void BM_CombineRowBlock(benchmark::State& state) {
  const int64_t M = 64, N = state.range(0), d = 64;
  std::vector<float> p(M * N, 1.0f / static_cast<float>(N)), v(N * d), out(M * d);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  for (float& x : v) x = normal(rng);
  const std::vector<RowSpan> keys(M, RowSpan{0, N});
  for (auto _ : state) combineRowBlock(p.data(), N, keys.data(), M, v.data(), d, d, out.data(), d);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * M * N * d, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_CombineRowBlock)->Arg(1024);

}  // namespace
}  // namespace attnscope
