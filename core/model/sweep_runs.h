// The runs of a sweep (model/ablation_sweep.h, model/patching.h) spread over the threads: one
// runner per thread (the given one, and siblings with its settings), each run computed whole
// on its thread. A run's bits do not depend on the threads that compute it (the row GEMM,
// one head per thread: attention/row_gemm.h), so the results are those of the runs one after
// another; but no thread waits for another inside a run: a patched run of a few rows is many
// small GEMMs, and their OpenMP barriers took most of a sweep's time (85% of a loaded
// machine's samples in libgomp, perf, 2026-11-29).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/model.h"
#include "tensor/interrupt.h"

namespace attnscope {

// Runs run(runner, group, k) for k in [0, sizes[group]) of every group, the runs of a group in
// order on one runner (consecutive runs share the rows they leave unchanged), the groups in
// the given order over up to the OpenMP thread count of runners (runner first). progress:
// the fraction of the runs done, called on one thread at a time; returning false stops the
// sweep (Cancelled). An exception of a run stops the others and is thrown here. Every runner
// is left with no interventions.
void runSweepGroups(ModelRunner& runner, const std::vector<int64_t>& sizes,
                    const std::function<void(ModelRunner& runner, int64_t group, int64_t k)>& run,
                    const Progress& progress);

}  // namespace attnscope
