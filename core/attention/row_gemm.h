// The linear maps of a model, y = x W^T + b, and a head's scores and context, computed so
// that a row's value does not depend on the rows it shares the call with: each output
// y[i][n] is one FMA chain over k in order, then the bias, whatever M is. One row computed
// alone equals the same row computed among a thousand, bit for bit, so a model that appends
// a token computes only the new row (OpenBLAS's value for a row depends on the call's M).
//
// W is read in panels (weights.h: 64 outputs' weights per step over k, contiguous), float32
// or bfloat16 (widened in registers: a BF16 model's weights stay half-size); W in nn.Linear's
// layout [N, K] is packed into a panel at a time first. Register tiles of rows by 64 outputs
// (no sums across lanes), vectorised with Highway (runtime dispatch), threaded over panels.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/weights.h"

namespace attnscope {

// y [M, N] (row stride N) = x [M, K] (row stride K) W^T + b; b: [N] or null. Threads over W's
// rows when `threaded` (the bits do not depend on it).
void rowGemm(const float* x, int64_t M, const WeightRows& w, const float* b, float* y, bool threaded = true);

// A head's scores: y [M, j1 - j0] (rows ldy apart) = q [M, K] (rows ldq apart) times keys
// [j0, j1) of k [N, K] (rows K apart), transposed. Each cell is one FMA chain over K in order
// (0 for K = 0), with or without kt (k transposed by transposeKeys, worth it for more than a
// few rows), so its bits do not depend on the rows or keys its call covers. One thread.
struct KeysT {
  std::vector<float> data;  // [K, ld], zeros past the keys
  int64_t ld = 0;
};
KeysT transposeKeys(const float* k, int64_t N, int64_t K);
void scoreRows(const float* q, int64_t ldq, int64_t M, const float* k, const KeysT* kt, int64_t j0, int64_t j1,
               int64_t K, float* y, int64_t ldy);

// Allowed keys of one query row lie in [begin, end); begin == end when the row is fully masked.
struct RowSpan {
  int64_t begin = 0, end = 0;
};

// A block of rows' contexts, probability rows times V (up to 4 rows share each load of V):
// out row r (ldo apart) = sum over j in keys[r] of p[r][j] v[j], p rows ldp apart and indexed
// by key, v rows ldv apart from key 0. One FMA chain per output in key order, so a row's
// context has the same bits alone as in any block.
void combineRowBlock(const float* p, int64_t ldp, const RowSpan* keys, int64_t rows, const float* v, int64_t ldv,
                     int64_t d, float* out, int64_t ldo);

// to[0, n) = from[0, n) with non-temporal stores (no read of `to` first: maps in fresh memory
// are written once without being fetched), visible to other threads once they synchronise.
void streamCopy(const float* from, int64_t n, float* to);

}  // namespace attnscope
