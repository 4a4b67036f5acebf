// Built with -ffp-contract=off (core/CMakeLists.txt): each product and difference of the
// dequantization is rounded on its own, as in ggml_quants.cpp, so the values are its bits;
// the chains' multiply-adds are explicit MulAdd. Highway's dynamic dispatch compiles this file
// once per target (foreach_target.h re-includes it).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/quant_gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <limits>

#include <hwy/highway.h>

#include "attention/quant_gemm.h"
#include "tensor/ggml_quants.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// A vector of output rows: lane j's block starts at base + off[j]; lo and hi hold the offsets of
// the first and second half of the lanes as 64-bit lanes (for eight-byte gathers).
#if HWY_TARGET == HWY_SCALAR
struct RowOffsets {
  VI off;
  RowOffsets() = default;
  explicit RowOffsets(VI o) : off(o) {}
  HWY_INLINE void Advance(int bytes) { off = hn::Add(off, hn::Set(DI(), bytes)); }
};
#else
using DQ = hn::Repartition<int64_t, DF>;
using VQ = hn::Vec<DQ>;
struct RowOffsets {
  VI off;
  VQ lo, hi;
  RowOffsets() = default;
  explicit RowOffsets(VI o)
      : off(o), lo(hn::PromoteTo(DQ(), hn::LowerHalf(hn::Half<DI>(), o))), hi(hn::PromoteTo(DQ(), hn::UpperHalf(hn::Half<DI>(), o))) {}
  HWY_INLINE void Advance(int bytes) {
    off = hn::Add(off, hn::Set(DI(), bytes));
    lo = hn::Add(lo, hn::Set(DQ(), bytes));
    hi = hn::Add(hi, hn::Set(DQ(), bytes));
  }
};
#endif

// Lane j: the 4 bytes at base + at + off[j] (one output row's block per lane).
HWY_INLINE VI Dword(const uint8_t* base, const RowOffsets& o, int at) {
  return hn::GatherOffset(DI(), reinterpret_cast<const int32_t*>(base + at), o.off);
}
// Dword(at) and Dword(at + 4) from eight-byte gathers: half the loads of two four-byte ones.
HWY_INLINE void Dwords(const uint8_t* base, const RowOffsets& o, int at, VI& first, VI& second) {
#if HWY_TARGET == HWY_SCALAR
  first = Dword(base, o, at);
  second = Dword(base, o, at + 4);
#else
  const DI di;
  const int64_t* p = reinterpret_cast<const int64_t*>(base + at);
  const VI lo = hn::BitCast(di, hn::GatherOffset(DQ(), p, o.lo)), hi = hn::BitCast(di, hn::GatherOffset(DQ(), p, o.hi));
  first = hn::ConcatEven(di, hi, lo);
  second = hn::ConcatOdd(di, hi, lo);
#endif
}

// Each lane shifted right by `shift`, then masked.
HWY_INLINE VI Bits(VI v, int shift, int mask) { return hn::And(hn::ShiftRightSame(v, shift), hn::Set(DI(), mask)); }
// Byte b of each lane, zero-extended: one byte shuffle (the index of byte b of lane j within its
// 16-byte block, then three zeroing indices).
HWY_INLINE VI Byte(VI v, int b) {
  const DI di;
  const VI lane = hn::ShiftLeft<2>(hn::And(hn::Iota(di, 0), hn::Set(di, 3)));
  return hn::TableLookupBytesOr0(v, hn::Add(lane, hn::Set(di, static_cast<int32_t>(0x80808000u) | b)));
}
// Signed byte b of each lane.
HWY_INLINE VI SignedByte(VI v, int b) { return hn::ShiftRightSame(hn::ShiftLeftSame(v, 24 - 8 * b), 24); }
HWY_INLINE VF Float(VI v) { return hn::ConvertTo(DF(), v); }

// float16 bits (low 16 bits of each lane) to float32, exactly: subnormals as mantissa x 2^-24,
// infinities and NaNs kept.
HWY_INLINE VF HalfToFloat(VI h) {
  const DI di;
  const VI sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000)));
  const VI exponent = Bits(h, 10, 0x1F), mantissa = hn::And(h, hn::Set(di, 0x3FF));
  const VI subnormal = hn::BitCast(di, hn::Mul(Float(mantissa), hn::Set(DF(), 1.0f / 16777216.0f)));
  const VI normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exponent, hn::Set(di, 112))), hn::ShiftLeft<13>(mantissa));
  const VI special = hn::Or(hn::Set(di, 0x7F800000), hn::ShiftLeft<13>(mantissa));
  const VI bits = hn::IfThenElse(hn::Eq(exponent, hn::Zero(di)), subnormal,
                                 hn::IfThenElse(hn::Eq(exponent, hn::Set(di, 31)), special, normal));
  return hn::BitCast(DF(), hn::Or(bits, sign));
}

// One FMA chain per (row of x, group of output rows, lane) over k in order: the panel path's
// chains. NG groups at once: their chains are independent, so one waits on another's
// multiply-add no more (a group alone ran at the FMA's latency, not its throughput).
template <int MR, int NG>
struct Chains {
  const float* x;
  int64_t ldx;
  VF acc[MR][NG];
  HWY_INLINE void Feed(int64_t k, const VF (&w)[NG]) {
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const VF xr = hn::Set(DF(), x[r * ldx + k]);
#pragma GCC unroll 4
      for (int g = 0; g < NG; ++g) acc[r][g] = hn::MulAdd(xr, w[g], acc[r][g]);
    }
  }
};

// Each decoder: kValues values in kBytes per step of a row; Step feeds them in k order for NG
// groups of rows (their first bytes at base + off[g]), each the float32 that ggml_quants.cpp
// gives (the same operations in the same order).
struct Q8_0 {  // d, qs[32]: q * d
  static constexpr uint32_t kId = 8;
  static constexpr int kValues = 32, kBytes = 34;
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG];
    for (int g = 0; g < NG; ++g) d[g] = HalfToFloat(hn::And(Dword(base, off[g], 0), hn::Set(DI(), 0xFFFF)));
    for (int i = 0; i < 8; i += 2) {
      VI q[2][NG];
      for (int g = 0; g < NG; ++g) Dwords(base, off[g], 2 + 4 * i, q[0][g], q[1][g]);
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) {
          VF w[NG];
          for (int g = 0; g < NG; ++g) w[g] = hn::Mul(Float(SignedByte(q[h][g], b)), d[g]);
          s.Feed(k0 + 4 * (i + h) + b, w);
        }
    }
  }
};

struct Q4_K {  // d, dmin, scales[12], qs[128]: (d sc) q - dmin m per sub-block of 32
  static constexpr uint32_t kId = 12;
  static constexpr int kValues = 256, kBytes = 144;
  // Sub-block sb's six-bit scale and min from scales' three dwords (ggml's get_scale_min_k4).
  static HWY_INLINE void ScaleMin(const VI s[3], int sb, VI& sc, VI& m) {
    if (sb < 4) {
      sc = Bits(s[0], 8 * sb, 63);
      m = Bits(s[1], 8 * sb, 63);
    } else {
      const int j = 8 * (sb - 4);
      sc = hn::Or(Bits(s[2], j, 0x0F), Bits(s[0], j + 2, 0x30));
      m = hn::Or(Bits(s[2], j + 4, 0x0F), Bits(s[1], j + 2, 0x30));
    }
  }
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG], dmin[NG];
    VI scales[NG][3];
    for (int g = 0; g < NG; ++g) {
      VI dd;
      Dwords(base, off[g], 0, dd, scales[g][0]);
      Dwords(base, off[g], 8, scales[g][1], scales[g][2]);
      d[g] = HalfToFloat(Bits(dd, 0, 0xFFFF));
      dmin[g] = HalfToFloat(Bits(dd, 16, 0xFFFF));
    }
    for (int a = 0; a < 4; ++a) {
      VI qs[8][NG];
      for (int i = 0; i < 8; i += 2)
        for (int g = 0; g < NG; ++g) Dwords(base, off[g], 16 + 32 * a + 4 * i, qs[i][g], qs[i + 1][g]);
      for (int t = 0; t < 2; ++t) {  // sub-block 2a + t: nibble t of qs[32 a + l]
        VF dl[NG], ml[NG];
        for (int g = 0; g < NG; ++g) {
          VI sc, m;
          ScaleMin(scales[g], 2 * a + t, sc, m);
          dl[g] = hn::Mul(d[g], Float(sc));
          ml[g] = hn::Mul(dmin[g], Float(m));
        }
        for (int i = 0; i < 8; ++i) {
          VI nibbles[NG];
          for (int g = 0; g < NG; ++g) nibbles[g] = Bits(qs[i][g], 4 * t, 0x0F0F0F0F);
          // dl q - ml fused: dl q is exact (11 bits of float16 d, 6 of sc, 4 of q), so the one
          // rounding of the difference is ggml's, NaN and infinity cases alike.
#pragma GCC unroll 4
          for (int b = 0; b < 4; ++b) {
            VF w[NG];
            for (int g = 0; g < NG; ++g) w[g] = hn::MulSub(dl[g], Float(Byte(nibbles[g], b)), ml[g]);
            s.Feed(k0 + 64 * a + 32 * t + 4 * i + b, w);
          }
        }
      }
    }
  }
};

struct Q6_K {  // ql[128], qh[64], scales[16] (int8), d: (d sc) (q - 32) per 16 values
  static constexpr uint32_t kId = 14;
  static constexpr int kValues = 256, kBytes = 210;
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG];
    VI scales[NG][4];
    for (int g = 0; g < NG; ++g) {
      d[g] = HalfToFloat(Bits(Dword(base, off[g], 206), 16, 0xFFFF));
      Dwords(base, off[g], 192, scales[g][0], scales[g][1]);
      Dwords(base, off[g], 200, scales[g][2], scales[g][3]);
    }
    for (int a = 0; a < 2; ++a) {
      // Each gathered once (most live on the stack): quarters q and q + 2 read the same ql bytes.
      VI qh[8][NG], ql[2][8][NG];
      for (int i = 0; i < 8; i += 2)
        for (int g = 0; g < NG; ++g) {
          Dwords(base, off[g], 128 + 32 * a + 4 * i, qh[i][g], qh[i + 1][g]);
          for (int p = 0; p < 2; ++p) Dwords(base, off[g], 64 * a + 32 * p + 4 * i, ql[p][i][g], ql[p][i + 1][g]);
        }
      for (int q = 0; q < 4; ++q) {  // value 128 a + 32 q + l: ql[64 a + 32 (q % 2) + l], nibble q / 2
        for (int half = 0; half < 2; ++half) {
          const int is = 8 * a + half + 2 * q;
          VF dsc[NG];
          for (int g = 0; g < NG; ++g) dsc[g] = hn::Mul(d[g], Float(SignedByte(scales[g][is / 4], is % 4)));
          for (int i = 4 * half; i < 4 * half + 4; ++i) {
            // Four six-bit values, one per byte: the nibble of ql, the two bits of qh above it.
            VI six[NG];
            for (int g = 0; g < NG; ++g)
              six[g] = hn::Or(Bits(ql[q % 2][i][g], 4 * (q / 2), 0x0F0F0F0F), hn::ShiftLeft<4>(Bits(qh[i][g], 2 * q, 0x03030303)));
#pragma GCC unroll 4
            for (int b = 0; b < 4; ++b) {
              VF w[NG];
              for (int g = 0; g < NG; ++g) w[g] = hn::Mul(dsc[g], Float(hn::Sub(Byte(six[g], b), hn::Set(DI(), 32))));
              s.Feed(k0 + 128 * a + 32 * q + 4 * i + b, w);
            }
          }
        }
      }
    }
  }
};

struct F16 {  // two values per dword
  static constexpr uint32_t kId = 1;
  static constexpr int kValues = 2, kBytes = 4;
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VI pair[NG];
    for (int g = 0; g < NG; ++g) pair[g] = Dword(base, off[g], 0);
    for (int half = 0; half < 2; ++half) {
      VF w[NG];
      for (int g = 0; g < NG; ++g) w[g] = HalfToFloat(Bits(pair[g], 16 * half, 0xFFFF));
      s.Feed(k0 + half, w);
    }
  }
};

// NG vectors of output rows (group g's first bytes at base + offsets[g lanes + j]) for MR rows
// of x: every chain over all of K in registers, then valid[g] lanes of group g stored at
// y + g lanes.
template <class T, int MR, int NG>
HWY_NOINLINE void Group(const uint8_t* base, const int32_t* offsets, int64_t K, const float* x, int64_t ldx, float* y,
                        int64_t ldy, const int64_t* valid) {
  const DF df;
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  RowOffsets off[NG];
  for (int g = 0; g < NG; ++g) off[g] = RowOffsets(hn::LoadU(di, offsets + g * lanes));
  Chains<MR, NG> chains{x, ldx, {}};
  for (int r = 0; r < MR; ++r)
    for (int g = 0; g < NG; ++g) chains.acc[r][g] = hn::Zero(df);
  for (int64_t k0 = 0; k0 < K; k0 += T::kValues) {
    T::Step(base, off, k0, chains);
    for (int g = 0; g < NG; ++g) off[g].Advance(T::kBytes);
  }
  HWY_ALIGN float tail[hn::MaxLanes(df)];
  for (int r = 0; r < MR; ++r)
    for (int g = 0; g < NG; ++g) {
      if (valid[g] == lanes) {
        hn::StoreU(chains.acc[r][g], df, y + r * ldy + g * lanes);
      } else if (valid[g] > 0) {
        hn::Store(chains.acc[r][g], df, tail);
        std::copy_n(tail, valid[g], y + r * ldy + g * lanes);
      }
    }
}

using GroupFn = void (*)(const uint8_t*, const int32_t*, int64_t, const float*, int64_t, float*, int64_t, const int64_t*);

// Groups of output rows bundled per call, by rows of x: at least four chains in flight.
constexpr int kBundle[kDecodeRows] = {4, 2, 2, 1};
constexpr int kMaxBundle = 4;

// Rows of W a bundle of vectors at a time (a vector's missing rows repeat its first row, a
// bundle's missing vectors its first vector; neither stored), the bundles split between the
// threads.
template <class T>
void Rows(const float* x, int64_t ldx, int64_t M, const WeightRows& w, float* y, int64_t ldy, bool threaded) {
  static constexpr GroupFn kGroups[kDecodeRows] = {&Group<T, 1, kBundle[0]>, &Group<T, 2, kBundle[1]>,
                                                   &Group<T, 3, kBundle[2]>, &Group<T, 4, kBundle[3]>};
  const DI di;
  const int64_t N = w.N, lanes = static_cast<int64_t>(hn::Lanes(di)), bundle = kBundle[M - 1];
  const int64_t bundles = (N + bundle * lanes - 1) / (bundle * lanes);
#pragma omp parallel for schedule(static) if (threaded && bundles > 1 && M * N * w.K > (1 << 16))
  for (int64_t u = 0; u < bundles; ++u) {
    const int64_t first = u * bundle * lanes;
    HWY_ALIGN int32_t offsets[kMaxBundle * hn::MaxLanes(di)] = {};
    int64_t valid[kMaxBundle] = {};
    for (int64_t g = 0; g < bundle; ++g) {
      const int64_t n0 = first + g * lanes;
      valid[g] = std::clamp<int64_t>(N - n0, 0, lanes);
      for (int64_t j = 0; j < lanes; ++j) {
        const int64_t n = j < valid[g] ? n0 + j : valid[g] > 0 ? n0 : first;
        offsets[g * lanes + j] = static_cast<int32_t>(w.quant.row(n) - w.quant.data);
      }
    }
    kGroups[M - 1](w.quant.data, offsets, w.K, x, ldx, y + first, ldy, valid);
  }
}

using RowsFn = void (*)(const float*, int64_t, int64_t, const WeightRows&, float*, int64_t, bool);
struct Decoder {
  uint32_t id;
  int64_t values;  // K must be a multiple
  RowsFn rows;
};
constexpr Decoder kDecoders[] = {{Q8_0::kId, Q8_0::kValues, &Rows<Q8_0>},
                                 {Q4_K::kId, Q4_K::kValues, &Rows<Q4_K>},
                                 {Q6_K::kId, Q6_K::kValues, &Rows<Q6_K>},
                                 {F16::kId, F16::kValues, &Rows<F16>}};

bool DecodeQuantRows(const float* x, int64_t ldx, int64_t M, const WeightRows& w, float* y, int64_t ldy,
                     bool threaded) {
  for (const Decoder& d : kDecoders)
    if (d.id == w.quant.type->id && w.K % d.values == 0) {
      d.rows(x, ldx, M, w, y, ldy, threaded);
      return true;
    }
  return false;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(DecodeQuantRows);

// Offsets into the blocks are 32-bit gather offsets: rows past 2 GiB take the panel path.
bool decodeQuantRows(const float* x, int64_t ldx, int64_t M, const WeightRows& w, float* y, int64_t ldy,
                     bool threaded) {
  if (!w.quant.type || M < 1 || M > kDecodeRows || w.N <= 0 || w.K <= 0) return false;
  if (static_cast<uint64_t>(w.quant.span_rows) * w.quant.row_bytes > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return false;
  return HWY_DYNAMIC_DISPATCH(DecodeQuantRows)(x, ldx, M, w, y, ldy, threaded);
}
}  // namespace attnscope
#endif
