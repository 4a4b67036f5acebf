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

// Lane j: the 4 bytes at base + at + off[j] (one output row's block per lane).
HWY_INLINE VI Dword(const uint8_t* base, VI off, int at) {
  return hn::GatherOffset(DI(), reinterpret_cast<const int32_t*>(base + at), off);
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

// One FMA chain per (row of x, lane) over k in order: the panel path's chains.
template <int MR>
struct Chains {
  const float* x;
  int64_t ldx;
  VF acc[MR];
  HWY_INLINE void Feed(int64_t k, VF w) {
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r] = hn::MulAdd(hn::Set(DF(), x[r * ldx + k]), w, acc[r]);
  }
};

// Each decoder: kValues values in kBytes per step of a row; Step feeds them in k order, each
// the float32 that ggml_quants.cpp gives (the same operations in the same order).
struct Q8_0 {  // d, qs[32]: q * d
  static constexpr uint32_t kId = 8;
  static constexpr int kValues = 32, kBytes = 34;
  template <class S>
  static HWY_INLINE void Step(const uint8_t* base, VI off, int64_t k0, S& s) {
    const VF d = HalfToFloat(hn::And(Dword(base, off, 0), hn::Set(DI(), 0xFFFF)));
    for (int i = 0; i < 8; ++i) {
      const VI q = Dword(base, off, 2 + 4 * i);
#pragma GCC unroll 4
      for (int b = 0; b < 4; ++b) s.Feed(k0 + 4 * i + b, hn::Mul(Float(SignedByte(q, b)), d));
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
  template <class S>
  static HWY_INLINE void Step(const uint8_t* base, VI off, int64_t k0, S& s) {
    const VI dd = Dword(base, off, 0);
    const VF d = HalfToFloat(Bits(dd, 0, 0xFFFF)), dmin = HalfToFloat(Bits(dd, 16, 0xFFFF));
    const VI scales[3] = {Dword(base, off, 4), Dword(base, off, 8), Dword(base, off, 12)};
    for (int a = 0; a < 4; ++a) {
      VI qs[8];
      for (int i = 0; i < 8; ++i) qs[i] = Dword(base, off, 16 + 32 * a + 4 * i);
      for (int t = 0; t < 2; ++t) {  // sub-block 2a + t: nibble t of qs[32 a + l]
        VI sc, m;
        ScaleMin(scales, 2 * a + t, sc, m);
        const VF dl = hn::Mul(d, Float(sc)), ml = hn::Mul(dmin, Float(m));
        for (int i = 0; i < 8; ++i) {
          const VI nibbles = Bits(qs[i], 4 * t, 0x0F0F0F0F);
#pragma GCC unroll 4
          for (int b = 0; b < 4; ++b)
            s.Feed(k0 + 64 * a + 32 * t + 4 * i + b, hn::Sub(hn::Mul(dl, Float(Byte(nibbles, b))), ml));
        }
      }
    }
  }
};

struct Q6_K {  // ql[128], qh[64], scales[16] (int8), d: (d sc) (q - 32) per 16 values
  static constexpr uint32_t kId = 14;
  static constexpr int kValues = 256, kBytes = 210;
  template <class S>
  static HWY_INLINE void Step(const uint8_t* base, VI off, int64_t k0, S& s) {
    const VF d = HalfToFloat(Bits(Dword(base, off, 206), 16, 0xFFFF));
    const VI scales[4] = {Dword(base, off, 192), Dword(base, off, 196), Dword(base, off, 200), Dword(base, off, 204)};
    for (int a = 0; a < 2; ++a) {
      VI qh[8];
      for (int i = 0; i < 8; ++i) qh[i] = Dword(base, off, 128 + 32 * a + 4 * i);
      for (int q = 0; q < 4; ++q) {  // value 128 a + 32 q + l: ql[64 a + 32 (q % 2) + l], nibble q / 2
        VI ql[8];
        for (int i = 0; i < 8; ++i) ql[i] = Dword(base, off, 64 * a + 32 * (q % 2) + 4 * i);
        for (int half = 0; half < 2; ++half) {
          const int is = 8 * a + half + 2 * q;
          const VF dsc = hn::Mul(d, Float(SignedByte(scales[is / 4], is % 4)));
          for (int i = 4 * half; i < 4 * half + 4; ++i) {
            // Four six-bit values, one per byte: the nibble of ql, the two bits of qh above it.
            const VI six = hn::Or(Bits(ql[i], 4 * (q / 2), 0x0F0F0F0F), hn::ShiftLeft<4>(Bits(qh[i], 2 * q, 0x03030303)));
#pragma GCC unroll 4
            for (int b = 0; b < 4; ++b)
              s.Feed(k0 + 128 * a + 32 * q + 4 * i + b, hn::Mul(dsc, Float(hn::Sub(Byte(six, b), hn::Set(DI(), 32)))));
          }
        }
      }
    }
  }
};

struct F16 {  // two values per dword
  static constexpr uint32_t kId = 1;
  static constexpr int kValues = 2, kBytes = 4;
  template <class S>
  static HWY_INLINE void Step(const uint8_t* base, VI off, int64_t k0, S& s) {
    const VI pair = Dword(base, off, 0);
    s.Feed(k0, HalfToFloat(Bits(pair, 0, 0xFFFF)));
    s.Feed(k0 + 1, HalfToFloat(Bits(pair, 16, 0xFFFF)));
  }
};

// One vector of output rows (their first bytes at base + off) for MR rows of x: every chain
// over all of K in registers, then `valid` lanes stored.
template <class T, int MR>
HWY_NOINLINE void Group(const uint8_t* base, VI off, int64_t K, const float* x, int64_t ldx, float* y, int64_t ldy,
                        int64_t valid) {
  const DF df;
  Chains<MR> chains{x, ldx, {}};
  for (int r = 0; r < MR; ++r) chains.acc[r] = hn::Zero(df);
  const VI step = hn::Set(DI(), T::kBytes);
  for (int64_t k0 = 0; k0 < K; k0 += T::kValues, off = hn::Add(off, step)) T::Step(base, off, k0, chains);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  HWY_ALIGN float tail[hn::MaxLanes(df)];
  for (int r = 0; r < MR; ++r) {
    if (valid == lanes) {
      hn::StoreU(chains.acc[r], df, y + r * ldy);
    } else {
      hn::Store(chains.acc[r], df, tail);
      std::copy_n(tail, valid, y + r * ldy);
    }
  }
}

using GroupFn = void (*)(const uint8_t*, VI, int64_t, const float*, int64_t, float*, int64_t, int64_t);

// Rows of W a vector at a time (the last vector's missing rows repeat its first row, not
// stored), the groups split between the threads.
template <class T>
void Rows(const float* x, int64_t ldx, int64_t M, const WeightRows& w, float* y, int64_t ldy, bool threaded) {
  static constexpr GroupFn kGroups[kDecodeRows] = {&Group<T, 1>, &Group<T, 2>, &Group<T, 3>, &Group<T, 4>};
  const DI di;
  const int64_t N = w.N, lanes = static_cast<int64_t>(hn::Lanes(di)), groups = (N + lanes - 1) / lanes;
#pragma omp parallel for schedule(static) if (threaded && groups > 1 && M * N * w.K > (1 << 16))
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t n0 = g * lanes, valid = std::min(lanes, N - n0);
    HWY_ALIGN int32_t offsets[hn::MaxLanes(di)] = {};
    for (int64_t j = 0; j < lanes; ++j)
      offsets[j] = static_cast<int32_t>(w.quant.row(n0 + (j < valid ? j : 0)) - w.quant.data);
    kGroups[M - 1](w.quant.data, hn::Load(di, offsets), w.K, x, ldx, y + n0, ldy, valid);
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
