// Highway's dynamic dispatch compiles this file once per target (foreach_target.h
// re-includes it), then HWY_DYNAMIC_DISPATCH picks the best one at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/row_gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <vector>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "attention/quant_gemm.h"
#include "attention/row_gemm.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Register tile: 4 rows of x by 4 vectors of columns (16 accumulators of AVX-512's 32 vector
// registers), 2 rows below (16 registers).
constexpr int kTileRows = HWY_MAX_BYTES >= 64 ? 4 : 2;

template <class D>
HWY_INLINE hn::Vec<D> LoadW(D df, const float* p) { return hn::LoadU(df, p); }
template <class D>
HWY_INLINE hn::Vec<D> LoadW(D df, const uint16_t* p) {
  if constexpr (hn::MaxLanes(D()) == 1) {
    return hn::Set(df, bf16ToFloat(*p));
  } else {
    const hn::Rebind<hwy::bfloat16_t, D> dbf;
    return hn::PromoteTo(df, hn::LoadU(dbf, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  }
}

// y[r][j] = one FMA chain over c in order of x[r][c] wt[c][j], for MR rows of x (stride ldx)
// and NV vectors of columns (wt: [K, ldw], a weight panel or K^T; vectors 4 to 7 from the
// next panel, `next` floats on, for few rows: two streams of weights); `valid` of the tile's
// columns are stored.
template <int MR, int NV, class T>
HWY_NOINLINE void Tile(const float* x, int64_t ldx, const T* wt, int64_t ldw, int64_t next, int64_t K, float* y,
                       int64_t ldy, int64_t valid) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VF acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = hn::Zero(df);
  for (int64_t c = 0; c < K; ++c) {
    VF wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) wv[v] = LoadW(df, wt + (v / 4) * next + c * ldw + (v % 4) * lanes);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const VF xr = hn::Set(df, x[r * ldx + c]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(xr, wv[v], acc[r][v]);
    }
  }
  HWY_ALIGN float tail[NV * hn::MaxLanes(df)];
  for (int r = 0; r < MR; ++r) {
    if (valid == NV * lanes) {
      for (int v = 0; v < NV; ++v) hn::StoreU(acc[r][v], df, y + r * ldy + v * lanes);
    } else {
      for (int v = 0; v < NV; ++v) hn::StoreU(acc[r][v], df, tail + v * lanes);
      std::copy_n(tail, valid, y + r * ldy);
    }
  }
}

template <class T>
using TileFn = void (*)(const float*, int64_t, const T*, int64_t, int64_t, int64_t, float*, int64_t, int64_t);

// Every edge shape: kTiles<T>[rows - 1][vectors - 1] (rows past kTileRows unused on narrow targets).
template <class T>
constexpr TileFn<T> kTiles[4][4] = {{&Tile<1, 1, T>, &Tile<1, 2, T>, &Tile<1, 3, T>, &Tile<1, 4, T>},
                                    {&Tile<2, 1, T>, &Tile<2, 2, T>, &Tile<2, 3, T>, &Tile<2, 4, T>},
                                    {&Tile<3, 1, T>, &Tile<3, 2, T>, &Tile<3, 3, T>, &Tile<3, 4, T>},
                                    {&Tile<4, 1, T>, &Tile<4, 2, T>, &Tile<4, 3, T>, &Tile<4, 4, T>}};

// Columns [j0, j1) of wt ([K, ldw]) for M rows of x, in tiles of up to kTileRows rows by 4
// vectors of columns; y's column 0 is column j0.
template <class T>
void Columns(const float* x, int64_t ldx, int64_t M, const T* wt, int64_t ldw, int64_t K, int64_t j0, int64_t j1,
             float* y, int64_t ldy) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t j = j0; j < j1; j += 4 * lanes) {
    const int64_t nv = std::min<int64_t>(4, (j1 - j + lanes - 1) / lanes), valid = std::min(j1 - j, nv * lanes);
    for (int64_t i = 0; i < M; i += kTileRows) {
      const int64_t mr = std::min<int64_t>(kTileRows, M - i);
      kTiles<T>[mr - 1][nv - 1](x + i * ldx, ldx, wt + j, ldw, 0, K, y + i * ldy + (j - j0), ldy, valid);
    }
  }
}

// One or two rows by two panels (AVX-512: a panel is 4 vectors): reading two streams of
// weights at once keeps more of memory's bandwidth than one.
template <class T>
constexpr TileFn<T> kPairTiles[2] = {&Tile<1, 8, T>, &Tile<2, 8, T>};

// Every row of x by W, one panel of 64 outputs at a time (the panels split between the
// threads, each swept over all rows while it stays in L2), then the bias. Weights not in
// panels are packed panel by panel into a scratch first: the same values, the same bits.
template <class T>
void Run(const float* x, int64_t ldx, int64_t M, const WeightRows& w, const T* data, const float* b, float* y,
         int64_t ldy, bool threaded) {
  const int64_t N = w.N, K = w.K, panels = panelCount(N);
  const bool pairs = w.panels && M <= 2 && 4 * static_cast<int64_t>(hn::Lanes(DF())) == kPanelWidth;
  const int64_t step = pairs ? 2 : 1, steps = (panels + step - 1) / step;
#pragma omp parallel if (threaded && steps > 1 && M * N * K > (1 << 16))
  {
    FloatBuffer scratch(w.panels ? 0 : static_cast<size_t>(K * kPanelWidth));  // each panel written before read
#pragma omp for schedule(static)
    for (int64_t q = 0; q < steps; ++q) {
      const int64_t p = q * step, n0 = p * kPanelWidth, cols = std::min(N - n0, step * kPanelWidth);
      if (pairs && cols > kPanelWidth) {
        kPairTiles<T>[M - 1](x, ldx, data + p * K * kPanelWidth, kPanelWidth, K * kPanelWidth, K, y + n0, ldy, cols);
      } else if (w.panels) {
        Columns(x, ldx, M, data + p * K * kPanelWidth, kPanelWidth, K, 0, cols, y + n0, ldy);
      } else {
        if (w.quant.type) {
          panelOf(w.quant, N, K, p, scratch.data());
        } else {
          panelOf(data, w.stride(), N, K, p, scratch.data());
        }
        Columns(x, ldx, M, scratch.data(), kPanelWidth, K, 0, cols, y + n0, ldy);
      }
    }
    if (b) {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n) y[i * ldy + n] += b[n];
    }
  }
}

void RowGemm(const float* x, int64_t ldx, int64_t M, const WeightRows& w, const float* b, float* y, int64_t ldy,
             bool threaded) {
  if (w.bf16) {
    Run(x, ldx, M, w, w.bf16, b, y, ldy, threaded);
  } else if (w.quant.type) {  // dequantized into each thread's panel scratch
    Run<float>(x, ldx, M, w, nullptr, b, y, ldy, threaded);
  } else {
    Run(x, ldx, M, w, w.f32, b, y, ldy, threaded);
  }
}

// Floats per vector on this target (K^T's padding).
int64_t FloatLanes() { return static_cast<int64_t>(hn::Lanes(DF())); }

// Keys [j0, j1) from K^T (kt: [K, ldk]) in register tiles: no sums across lanes, each cell one
// chain over c.
void ScoreRows(const float* x, int64_t ldx, int64_t M, const float* kt, int64_t ldk, int64_t K, int64_t j0,
               int64_t j1, float* y, int64_t ldy) {
  Columns(x, ldx, M, kt, ldk, K, j0, j1, y, ldy);
}

// ScoreRows' chains for a few rows from k as it lies (no transpose), eight keys at a time.
void ScoreFewRows(const float* q, int64_t ldq, int64_t M, const float* k, int64_t K, int64_t j0, int64_t j1, float* y,
                  int64_t ldy) {
  constexpr int64_t kKeys = 8;
  for (int64_t i = 0; i < M; ++i) {
    const float* x = q + i * ldq;
    float* out = y + i * ldy;
    int64_t j = j0;
    for (; j + kKeys <= j1; j += kKeys) {
      float acc[kKeys] = {};
      for (int64_t c = 0; c < K; ++c)
#pragma GCC unroll 8
        for (int64_t u = 0; u < kKeys; ++u) acc[u] = std::fma(x[c], k[(j + u) * K + c], acc[u]);
      std::copy_n(acc, kKeys, out + (j - j0));
    }
    for (; j < j1; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < K; ++c) acc = std::fma(x[c], k[j * K + c], acc);
      out[j - j0] = acc;
    }
  }
}

// out[c] = sum_j p[j] v[j][c]: columns four vectors at a time, keys in order; the columns past
// the last full vector one by one, keys in the same order.
void CombineRows(const float* p, int64_t n, const float* v, int64_t ldv, int64_t d, float* out) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t c0 = 0;
  for (; c0 + 4 * lanes <= d; c0 += 4 * lanes) {
    VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t j = 0; j < n; ++j) {
      const VF pj = hn::Set(df, p[j]);
      const float* row = v + j * ldv + c0;
      a0 = hn::MulAdd(pj, hn::LoadU(df, row), a0);
      a1 = hn::MulAdd(pj, hn::LoadU(df, row + lanes), a1);
      a2 = hn::MulAdd(pj, hn::LoadU(df, row + 2 * lanes), a2);
      a3 = hn::MulAdd(pj, hn::LoadU(df, row + 3 * lanes), a3);
    }
    hn::StoreU(a0, df, out + c0);
    hn::StoreU(a1, df, out + c0 + lanes);
    hn::StoreU(a2, df, out + c0 + 2 * lanes);
    hn::StoreU(a3, df, out + c0 + 3 * lanes);
  }
  for (; c0 + lanes <= d; c0 += lanes) {
    VF a = hn::Zero(df);
    for (int64_t j = 0; j < n; ++j) a = hn::MulAdd(hn::Set(df, p[j]), hn::LoadU(df, v + j * ldv + c0), a);
    hn::StoreU(a, df, out + c0);
  }
  for (; c0 < d; ++c0) {
    float a = 0.0f;
    for (int64_t j = 0; j < n; ++j) a = std::fma(p[j], v[j * ldv + c0], a);
    out[c0] = a;
  }
}

// Rows shared per load of V (four vectors of columns each: 4 x 4 accumulators on AVX-512).
constexpr int kGroupRows = HWY_MAX_BYTES >= 64 ? 4 : 2;

// Columns [c0, c0 + 4 lanes) of R rows: each row's keys before the keys all R rows share, alone;
// the shared keys for all rows per load of V; then each row's keys after them. Every output is
// one FMA chain in key order, as in CombineRows.
template <int R>
HWY_NOINLINE void CombineGroup(const float* p, int64_t ldp, const RowSpan* keys, const float* v, int64_t ldv,
                               int64_t c0, float* out, int64_t ldo) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VF acc[R][4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[r][q] = hn::Zero(df);
  int64_t shared_begin = keys[0].begin, shared_end = keys[0].end;
  for (int r = 1; r < R; ++r) {
    shared_begin = std::max(shared_begin, keys[r].begin);
    shared_end = std::min(shared_end, keys[r].end);
  }
  shared_end = std::max(shared_end, shared_begin);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    for (int64_t j = keys[r].begin; j < std::min(shared_begin, keys[r].end); ++j) {
      const VF pj = hn::Set(df, p[r * ldp + j]);
      const float* row = v + j * ldv + c0;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = hn::MulAdd(pj, hn::LoadU(df, row + q * lanes), acc[r][q]);
    }
  for (int64_t j = shared_begin; j < shared_end; ++j) {
    const float* row = v + j * ldv + c0;
    const VF v0 = hn::LoadU(df, row), v1 = hn::LoadU(df, row + lanes), v2 = hn::LoadU(df, row + 2 * lanes),
             v3 = hn::LoadU(df, row + 3 * lanes);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF pj = hn::Set(df, p[r * ldp + j]);
      acc[r][0] = hn::MulAdd(pj, v0, acc[r][0]);
      acc[r][1] = hn::MulAdd(pj, v1, acc[r][1]);
      acc[r][2] = hn::MulAdd(pj, v2, acc[r][2]);
      acc[r][3] = hn::MulAdd(pj, v3, acc[r][3]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    for (int64_t j = std::max(shared_end, keys[r].begin); j < keys[r].end; ++j) {
      const VF pj = hn::Set(df, p[r * ldp + j]);
      const float* row = v + j * ldv + c0;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = hn::MulAdd(pj, hn::LoadU(df, row + q * lanes), acc[r][q]);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) hn::StoreU(acc[r][q], df, out + r * ldo + c0 + q * lanes);
  }
}

using CombineGroupFn = void (*)(const float*, int64_t, const RowSpan*, const float*, int64_t, int64_t, float*, int64_t);
constexpr CombineGroupFn kCombineGroups[4] = {&CombineGroup<1>, &CombineGroup<2>, &CombineGroup<3>, &CombineGroup<4>};

void CombineRowBlock(const float* p, int64_t ldp, const RowSpan* keys, int64_t rows, const float* v, int64_t ldv,
                     int64_t d, float* out, int64_t ldo) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t wide = d / (4 * lanes) * (4 * lanes);  // columns in groups of four vectors
  for (int64_t i = 0; i < rows; i += kGroupRows) {
    const int64_t group = std::min<int64_t>(kGroupRows, rows - i);
    for (int64_t c0 = 0; c0 < wide; c0 += 4 * lanes)
      kCombineGroups[group - 1](p + i * ldp, ldp, keys + i, v, ldv, c0, out + i * ldo, ldo);
    if (wide < d)
      for (int64_t r = i; r < i + group; ++r)
        CombineRows(p + r * ldp + keys[r].begin, keys[r].end - keys[r].begin, v + keys[r].begin * ldv + wide, ldv,
                    d - wide, out + r * ldo + wide);
  }
}

// Aligned whole vectors as non-temporal stores, the edges plainly; then a store fence, so the
// values are visible to any thread that synchronises with this one afterwards.
void StreamCopy(const float* from, int64_t n, float* to) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const uintptr_t align = static_cast<uintptr_t>(lanes) * sizeof(float);
  int64_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(to + i) % align != 0; ++i) to[i] = from[i];
  for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(df, from + i), df, to + i);
  for (; i < n; ++i) to[i] = from[i];
  hwy::FlushStream();
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(RowGemm);
HWY_EXPORT(FloatLanes);
HWY_EXPORT(ScoreRows);
HWY_EXPORT(ScoreFewRows);
HWY_EXPORT(CombineRowBlock);
HWY_EXPORT(StreamCopy);

// An empty sum (K = 0) is the bias alone.
void rowGemm(const float* x, int64_t M, const WeightRows& w, const float* b, float* y, bool threaded) {
  if (M <= 0 || w.N <= 0) return;
  if (w.K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < w.N; ++n) y[i * w.N + n] = b ? b[n] : 0.0f;
    return;
  }
  if (decodeQuantRows(x, w.K, M, w, y, w.N, threaded)) {  // a few rows on ggml blocks: no panels
    if (b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < w.N; ++n) y[i * w.N + n] += b[n];
    return;
  }
  HWY_DYNAMIC_DISPATCH(RowGemm)(x, w.K, M, w, b, y, w.N, threaded);
}

KeysT transposeKeys(const float* k, int64_t N, int64_t K) {
  KeysT t;
  const int64_t lanes = HWY_DYNAMIC_DISPATCH(FloatLanes)();  // of the target ScoreRows runs on
  t.ld = (N + 2 * lanes - 1) / lanes * lanes;  // whole vectors past any start
  t.data.assign(static_cast<size_t>(K * t.ld), 0.0f);
  // Blocks of keys small enough to stay in L1 while each of their columns is written out
  // contiguously: key by key, the writes were ld floats apart (often 4 KiB, one cache set).
  constexpr int64_t kKeysPerBlock = 64;
  for (int64_t j0 = 0; j0 < N; j0 += kKeysPerBlock) {
    const int64_t j1 = std::min(N, j0 + kKeysPerBlock);
    for (int64_t c = 0; c < K; ++c) {
      float* out = t.data.data() + c * t.ld;
      for (int64_t j = j0; j < j1; ++j) out[j] = k[j * K + c];
    }
  }
  return t;
}

void scoreRows(const float* q, int64_t ldq, int64_t M, const float* k, const KeysT* kt, int64_t j0, int64_t j1,
               int64_t K, float* y, int64_t ldy) {
  if (M <= 0 || j1 <= j0) return;
  if (K == 0) {  // empty sums (and no K^T to point into)
    for (int64_t i = 0; i < M; ++i) std::fill(y + i * ldy, y + i * ldy + (j1 - j0), 0.0f);
    return;
  }
  if (kt) {
    HWY_DYNAMIC_DISPATCH(ScoreRows)(q, ldq, M, kt->data.data(), kt->ld, K, j0, j1, y, ldy);
    return;
  }
  HWY_DYNAMIC_DISPATCH(ScoreFewRows)(q, ldq, M, k, K, j0, j1, y, ldy);
}

void combineRowBlock(const float* p, int64_t ldp, const RowSpan* keys, int64_t rows, const float* v, int64_t ldv,
                     int64_t d, float* out, int64_t ldo) {
  if (rows > 0 && d > 0) HWY_DYNAMIC_DISPATCH(CombineRowBlock)(p, ldp, keys, rows, v, ldv, d, out, ldo);
}

void streamCopy(const float* from, int64_t n, float* to) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(StreamCopy)(from, n, to);
}
}  // namespace attnscope
#endif
