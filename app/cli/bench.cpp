// `attnscope bench`: times a full recompute (everything the views show: scores, probs,
// context, output; raw scores derived, buffers reused as in the app) or, for sizes whose
// maps do not fit, the tiled path (pooled overview of every head plus one exact 256 x 256
// tile). Measures the machine's float32 GEMM rate in the same run so that GFLOP/s can be
// read against it, and reports the process's peak RSS.
#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/head_table.h"
#include "attention/attention.h"
#include "attention/kernel.h"
#include "attention/tiles.h"
#include "cli/bench_model.h"
#include "cli/commands.h"
#include "cli/run_command.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

struct BenchSize {
  int64_t L, S, D, H;
};

// Maps above this many bytes take the tiled path (the app's 2 GiB budget).
constexpr uint64_t kFullPathBudget = uint64_t{2} << 30;
constexpr int64_t kOverviewCells = 512;  // overview grid per map (at most L x S)
constexpr int64_t kTileSize = 256;

std::vector<BenchSize> parseSizes(const std::string& text) {
  std::vector<BenchSize> sizes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    BenchSize s{};
    char tail = 0;
    if (std::sscanf(item.c_str(), "%ld:%ld:%ld:%ld%c", &s.L, &s.S, &s.D, &s.H, &tail) != 4 || s.L < 1 || s.S < 1 ||
        s.D < 1 || s.H < 1) {
      throw UsageError("--sizes: '" + item + "' is not L:S:D:H with positive integers");
    }
    if (s.D % s.H != 0) throw UsageError("--sizes: '" + item + "': D=" + std::to_string(s.D) +
                                         " is not divisible by H=" + std::to_string(s.H));
    sizes.push_back(s);
  }
  if (sizes.empty()) throw UsageError("--sizes: empty list");
  return sizes;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double peakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Best of a few float32 GEMMs [2048, 1024] x [1024, 1024], the projections' shape.
double gemmPeakGflops() {
  const int64_t m = 2048, n = 1024, k = 1024;
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  double best = 0.0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    gemm(false, m, n, k, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    best = std::max(best, 2.0 * m * n * k / secondsSince(start) / 1e9);
  }
  return best;
}

// Seeded self-attention inputs (key = value = query when L == S) with nn.Linear-like weights.
AttentionInputs benchInputs(const BenchSize& s, int64_t B) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](Shape shape, float sd) {
    Tensor t(std::move(shape));
    for (float& v : t.data) v = sd * normal(rng);
    return t;
  };
  AttentionInputs in;
  in.query = fill({B, s.L, s.D}, 1.0f);
  in.key = s.L == s.S ? in.query : fill({B, s.S, s.D}, 1.0f);
  in.value = in.key;
  const float w = 1.0f / std::sqrt(static_cast<float>(s.D));
  in.w_q = fill({s.D, s.D}, w);
  in.w_k = fill({s.D, s.D}, w);
  in.w_v = fill({s.D, s.D}, w);
  in.w_o = fill({s.D, s.D}, w);
  in.b_q = fill({s.D}, 0.1f);
  in.b_k = fill({s.D}, 0.1f);
  in.b_v = fill({s.D}, 0.1f);
  in.b_o = fill({s.D}, 0.1f);
  return in;
}

struct BenchFlags {
  std::string sizes = "512:512:512:8,1024:1024:768:12,2048:2048:1024:16";
  int64_t batch = 1;
  std::optional<int> repeat;
  std::optional<int> threads;
  bool json = false;
  std::string mask = "causal";
  std::string mode = "auto";
};

// Matrix work of a recompute: the four projections plus Q K^T and P V over the cells the
// mask allows (the masked ones are never multiplied).
double recomputeFlops(const BenchSize& s, int64_t B, const AttentionTrace& t) {
  double allowed = 0.0;
  for (uint8_t a : t.mask.allowed.data) allowed += a;
  return 2.0 * B * (2.0 * s.L + 2.0 * s.S) * s.D * s.D + 4.0 * allowed * s.H * (s.D / s.H);
}

nlohmann::ordered_json benchFull(const BenchSize& s, const BenchFlags& flags, int repeat) {
  const AttentionInputs in = benchInputs(s, flags.batch);
  AttentionOptions options;
  options.heads = s.H;
  options.mask = MaskSpec::parse(flags.mask);
  options.keep_raw_scores = false;  // as the app: derived on demand
  AttentionWorkspace workspace;
  std::vector<double> ms;
  double flops = 0.0;
  for (int rep = 0; rep <= repeat; ++rep) {  // rep 0 maps the buffers (first touch), then reuses them
    const auto start = std::chrono::steady_clock::now();
    const std::shared_ptr<const AttentionTrace> t = workspace.run(in, options, false);
    if (rep > 0) ms.push_back(1e3 * secondsSince(start));
    if (rep == 0) flops = recomputeFlops(s, flags.batch, *t);
  }
  const double median_ms = median(ms);
  return {{"mode", "full"}, {"median_ms", median_ms}, {"gflops", flops / (median_ms * 1e-3) / 1e9}};
}

nlohmann::ordered_json benchTiled(const BenchSize& s, const BenchFlags& flags, int repeat) {
  const AttentionInputs in = benchInputs(s, flags.batch);
  AttentionOptions options;
  options.heads = s.H;
  options.mask = MaskSpec::parse(flags.mask);
  std::vector<double> overview_ms, tile_ms;
  const int64_t rows = std::min(s.L, kOverviewCells), cols = std::min(s.S, kOverviewCells);
  for (int rep = 0; rep < repeat; ++rep) {
    // The recompute: projections of Q and K, then every head's overview with the head
    // table's measures, as the app computes it.
    const auto start = std::chrono::steady_clock::now();
    const TiledAttention tiled = prepareTiled(in, options);
    computeOverview(tiled, rows, cols, {}, headTableMeasures(s.L, s.S, {}));
    overview_ms.push_back(1e3 * secondsSince(start));
    // One exact tile in the middle of the last head, as a zoomed view asks for.
    const int64_t tr = std::min(s.L, kTileSize), tc = std::min(s.S, kTileSize);
    const auto tile_start = std::chrono::steady_clock::now();
    computeTile(tiled, flags.batch - 1, s.H - 1, (s.L - tr) / 2, tr, (s.S - tc) / 2, tc);
    tile_ms.push_back(1e3 * secondsSince(tile_start));
  }
  const double median_ms = median(overview_ms);
  const double flops = 2.0 * flags.batch * (s.L + s.S) * s.D * s.D +
                       2.0 * flags.batch * static_cast<double>(s.L) * s.S * s.D *
                           (MaskSpec::parse(flags.mask).causal ? 0.5 : 1.0);
  return {{"mode", "tiled"},   {"median_ms", median_ms}, {"gflops", flops / (median_ms * 1e-3) / 1e9},
          {"overview_ms", median_ms}, {"tile_ms", median(tile_ms)}};
}

bool fitsFullPath(const BenchSize& s, int64_t B) {
  // scores + probs [B, H, L, S] plus the mask [B, L, S]: what a full recompute holds.
  const double maps = (8.0 * s.H + 2.0) * B * static_cast<double>(s.L) * s.S;
  return maps <= static_cast<double>(kFullPathBudget);
}

int bench(const BenchFlags& flags) {
  const std::vector<BenchSize> sizes = parseSizes(flags.sizes);
  if (flags.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(flags.batch));
  if (flags.repeat && *flags.repeat < 1) throw UsageError("--repeat must be >= 1");
  if (flags.threads) {
    if (*flags.threads < 1) throw UsageError("--threads must be >= 1");
    omp_set_num_threads(*flags.threads);
    openblas_set_num_threads(*flags.threads);
  }
  MaskSpec::parse(flags.mask);  // InputError naming a bad term, before any timing
  const double gemm_peak = gemmPeakGflops();
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  if (!flags.json) {
    std::printf("attnscope bench: B=%ld, mask %s, %d threads, OpenBLAS %s, float32 GEMM peak %.0f GFLOP/s\n",
                static_cast<long>(flags.batch), flags.mask.c_str(), omp_get_max_threads(), openblas_get_corename(),
                gemm_peak);
    std::printf("%7s %7s %6s %4s  %-5s %11s %9s %7s %10s %12s %9s\n", "L", "S", "D", "H", "mode", "median_ms",
                "GFLOP/s", "of peak", "peak_rss", "overview_ms", "tile_ms");
  }
  for (const BenchSize& s : sizes) {
    const bool tiled = flags.mode == "tiled" || (flags.mode == "auto" && !fitsFullPath(s, flags.batch));
    if (tiled) {
      const uint64_t need = estimateTiledBytes(flags.batch, s.L, s.S, s.D, s.D, s.D, s.D, s.H, kOverviewCells,
                                               kOverviewCells);
      try {
        checkMemory(need);
      } catch (const InputError& e) {
        throw InputError("size " + std::to_string(s.L) + ":" + std::to_string(s.S) + ":" + std::to_string(s.D) +
                         ":" + std::to_string(s.H) + " even in tiles: " + e.what());
      }
    }
    nlohmann::ordered_json r = {{"L", s.L}, {"S", s.S}, {"D", s.D}, {"H", s.H}, {"B", flags.batch}};
    const nlohmann::ordered_json timing = tiled ? benchTiled(s, flags, flags.repeat.value_or(1))
                                                : benchFull(s, flags, flags.repeat.value_or(5));
    r.update(timing);
    r["gemm_peak_gflops"] = gemm_peak;
    r["peak_rss_mb"] = peakRssMb();
    r["mask"] = flags.mask;
    r["threads"] = omp_get_max_threads();
    r["blas_core"] = openblas_get_corename();
    if (!flags.json) {
      const double gflops = r["gflops"].get<double>();
      std::printf("%7ld %7ld %6ld %4ld  %-5s %11.1f %9.1f %6.0f%% %7.0f MB", static_cast<long>(s.L),
                  static_cast<long>(s.S), static_cast<long>(s.D), static_cast<long>(s.H),
                  r["mode"].get<std::string>().c_str(), r["median_ms"].get<double>(), gflops,
                  100.0 * gflops / gemm_peak, r["peak_rss_mb"].get<double>());
      if (tiled) std::printf(" %12.1f %9.1f", r["overview_ms"].get<double>(), r["tile_ms"].get<double>());
      std::printf("\n");
      std::fflush(stdout);
    }
    results.push_back(r);
  }
  if (flags.json) std::cout << results.dump(2) << "\n";
  return 0;
}

}  // namespace

int runBenchCommand(int argc, char** argv) {
  CLI::App app{"Time attnscope's attention recompute (or, for maps too large to hold, the tiled overview and one "
               "exact tile) with the GEMM peak of this machine and the peak memory, measured in the same run.",
               "attnscope bench"};
  BenchFlags flags;
  app.add_option("--sizes", flags.sizes, "comma-separated L:S:D:H (query length, key length, model size, heads)")
      ->capture_default_str();
  app.add_option("--batch", flags.batch, "batch size B")->capture_default_str();
  app.add_option("--repeat", flags.repeat, "timed runs per size, median reported (default 5 full, 1 tiled)");
  app.add_option("--threads", flags.threads, "threads for OpenMP and OpenBLAS (default: all cores)");
  app.add_flag("--json", flags.json, "print one JSON array on stdout, one object per size");
  app.add_option("--mask", flags.mask, "mask for every size, as in compute --mask")->capture_default_str();
  app.add_option("--mode", flags.mode, "auto (tiled when the maps pass 2 GiB), full or tiled")
      ->check(CLI::IsMember({"auto", "full", "tiled"}))
      ->capture_default_str();
  BenchModelFlags model;
  app.add_option("--model", model.model, "time a model folder instead (either kind): load, full forward, one "
                                         "appended token, peak RSS per --tokens size");
  app.add_option("--tokens", model.tokens, "with --model: sequence lengths L, comma-separated")->capture_default_str();
  app.add_option("--generate", model.generate, "with --model: also generate N tokens per size (step_ms: median per token)");
  app.add_option("--typing", model.typing,
                 "with --model: also append N tokens one by one after a run on L (the app's typing at the end; "
                 "typing_median_ms, typing_max_ms)");
  app.add_option("--rerun", model.rerun,
                 "with --model: also N full forwards, each on another text of length L, into the maps' storage "
                 "of the run before (the app's text replaced; rerun_ms: their median)");
  app.add_option("--logits", model.logits,
                 "with --model: the positions the forward and the append unembed: last (what the app shows "
                 "first) or all (what model run writes)")
      ->check(CLI::IsMember({"last", "all"}))
      ->capture_default_str();
  app.add_option("--ablate", model.ablate,
                 "with --model: also toggle this ablation on after a run on L (as --ablate of model run, e.g. L5H1), "
                 "to new predictions: ablate_ms (median of 3), beside append_ms");
  app.add_flag("--patch", model.patch,
               "with --model: also the full activation-patching sweep on L (every head, every layer and position): "
               "patch_ms, patched_runs, patch_run_ms");
  app.add_option("--sweep", model.sweep, "with --model: also the ablation sweep at the last position (sweep_ms)")
      ->check(CLI::IsMember({"zero", "mean"}));
  app.footer(
      "With --model, JSON fields per size: model, L, load_ms, forward_ms, append_ms, peak_rss_mb (and\n"
      "reruns, rerun_ms with --rerun; generated, step_ms with --generate; typed, typing_median_ms,\n"
      "typing_max_ms with --typing; ablate, ablate_ms, ablate_vs_append with --ablate; patched_runs,\n"
      "patch_ms, patch_run_ms with --patch; sweep, sweep_ms with --sweep).\n"
      "JSON fields per size: L, S, D, H, B, mode (full or tiled), median_ms, gflops, gemm_peak_gflops,\n"
      "peak_rss_mb (the process's peak so far), plus overview_ms and tile_ms when tiled.\n"
      "Compare with PyTorch side by side: /usr/bin/python3 scripts/bench_vs_torch.py\n"
      "Example: attnscope bench --sizes 1024:1024:768:12 --threads 2 --json");
  return runCommand(app, argc, argv, [&] {
    if (model.model.empty()) return bench(flags);
    if (flags.threads) {
      omp_set_num_threads(*flags.threads);
      openblas_set_num_threads(*flags.threads);
    }
    model.json = flags.json;
    return benchModel(model);
  });
}

}  // namespace attnscope
