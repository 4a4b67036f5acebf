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
// Bits [at, at + n) of each lane as a signed n-bit number.
HWY_INLINE VI SignedBits(VI v, int at, int n) { return hn::ShiftRightSame(hn::ShiftLeftSame(v, 32 - at - n), 32 - n); }
// Signed byte b of each lane.
HWY_INLINE VI SignedByte(VI v, int b) { return SignedBits(v, 8 * b, 8); }
// Each byte of each lane (an index 0..15) through kIq4Values: one byte shuffle of the table.
HWY_INLINE VI Iq4Bytes(VI indices) {
#if HWY_TARGET == HWY_SCALAR  // the lane holds 4 bytes, not the table's 16
  const auto at = static_cast<uint32_t>(hn::GetLane(indices));
  uint32_t bytes = 0;
  for (int b = 0; b < 4; ++b) bytes |= static_cast<uint32_t>(static_cast<uint8_t>(kIq4Values[(at >> 8 * b) & 15])) << 8 * b;
  return hn::Set(DI(), static_cast<int32_t>(bytes));
#else
  const DI di;
  return hn::TableLookupBytes(hn::BitCast(di, hn::LoadDup128(hn::Repartition<int8_t, DI>(), kIq4Values)), indices);
#endif
}
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

// The four values at k .. k + 3 of NG row vectors (one per byte of a gathered dword),
// value(g, b) for group g and byte b, fed in k order.
template <int NG, class S, class Value>
HWY_INLINE void FeedFour(int64_t k, S& s, const Value& value) {
#pragma GCC unroll 4
  for (int b = 0; b < 4; ++b) {
    VF w[NG];
    for (int g = 0; g < NG; ++g) w[g] = value(g, b);
    s.Feed(k + b, w);
  }
}

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
        FeedFour<NG>(k0 + 4 * (i + h), s, [&](int g, int b) { return hn::Mul(Float(SignedByte(q[h][g], b)), d[g]); });
    }
  }
};

// Q2_K / Q3_K: value 128 a + 32 t + l is bits 2 t of qs[32 a + l], in sub-block 8 a + 2 t + l / 16.
// Q2_K: scales[16] (scale | min << 4), qs[64], d, dmin: (d sc) q - dmin m.
// Q3_K: hmask[32], qs[64], scales[12] (sixteen six-bit scales), d: (d (sc - 32)) (q - 4), the
// third bit of q bit 4 a + t of hmask[l].
template <bool Three>
struct KQuant23 {
  static constexpr uint32_t kId = Three ? 11 : 10;
  static constexpr int kValues = 256, kBytes = Three ? 110 : 84, kQs = Three ? 32 : 16;
  // Q3_K's sub-block sb's scale - 32 from scales' three dwords: the low nibble from byte sb % 8,
  // the top two bits from byte 8 + sb % 4 (ggml's unpacking).
  static HWY_INLINE VI Scale3(const VI (&sc)[4], int sb) {
    const VI low = Bits(sc[sb % 8 / 4], 8 * (sb % 4) + 4 * (sb / 8), 0x0F);
    const VI high = Bits(sc[2], 8 * (sb % 4) + 2 * (sb / 4), 3);
    return hn::Sub(hn::Or(low, hn::ShiftLeft<4>(high)), hn::Set(DI(), 32));
  }
  template <int NG>
  static HWY_INLINE void Head(const uint8_t* base, const RowOffsets (&off)[NG], VF (&d)[NG], VF (&dmin)[NG],
                              VI (&scales)[NG][4], VI (&hmask)[8][NG]) {
    for (int g = 0; g < NG; ++g) {
      if constexpr (Three) {
        Dwords(base, off[g], 96, scales[g][0], scales[g][1]);
        scales[g][2] = Dword(base, off[g], 104);
        d[g] = HalfToFloat(Bits(Dword(base, off[g], 106), 16, 0xFFFF));  // a dword at 108 would end past the block
        for (int i = 0; i < 8; i += 2) Dwords(base, off[g], 4 * i, hmask[i][g], hmask[i + 1][g]);
      } else {
        const VI dd = Dword(base, off[g], 80);
        d[g] = HalfToFloat(Bits(dd, 0, 0xFFFF));
        dmin[g] = HalfToFloat(Bits(dd, 16, 0xFFFF));
        Dwords(base, off[g], 0, scales[g][0], scales[g][1]);
        Dwords(base, off[g], 8, scales[g][2], scales[g][3]);
      }
    }
  }
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG], dmin[NG];
    VI scales[NG][4], hmask[8][NG];
    Head(base, off, d, dmin, scales, hmask);
    for (int a = 0; a < 2; ++a) {
      VI qs[8][NG];
      for (int i = 0; i < 8; i += 2)
        for (int g = 0; g < NG; ++g) Dwords(base, off[g], kQs + 32 * a + 4 * i, qs[i][g], qs[i + 1][g]);
      for (int t = 0; t < 4; ++t)
        for (int half = 0; half < 2; ++half) {
          const int sb = 8 * a + 2 * t + half;
          VF dl[NG], ml[NG];
          for (int g = 0; g < NG; ++g) {
            if constexpr (Three) {
              dl[g] = hn::Mul(d[g], Float(Scale3(scales[g], sb)));
            } else {
              dl[g] = hn::Mul(d[g], Float(Bits(scales[g][sb / 4], 8 * (sb % 4), 0x0F)));
              ml[g] = hn::Mul(dmin[g], Float(Bits(scales[g][sb / 4], 8 * (sb % 4) + 4, 0x0F)));
            }
          }
          for (int i = 4 * half; i < 4 * half + 4; ++i) {
            VI q[NG];
            for (int g = 0; g < NG; ++g) {
              q[g] = Bits(qs[i][g], 2 * t, 0x03030303);
              if constexpr (Three) q[g] = hn::Or(q[g], hn::ShiftLeft<2>(Bits(hmask[i][g], 4 * a + t, 0x01010101)));
            }
            // Q2_K's dl q - ml fused: dl q is exact (11 bits of float16 d, 4 of sc, 2 of q), so
            // the one rounding of the difference is ggml's, NaN and infinity cases alike.
            FeedFour<NG>(k0 + 128 * a + 32 * t + 4 * i, s, [&](int g, int b) {
              return Three ? hn::Mul(dl[g], Float(hn::Sub(Byte(q[g], b), hn::Set(DI(), 4))))
                           : hn::MulSub(dl[g], Float(Byte(q[g], b)), ml[g]);
            });
          }
        }
    }
  }
};
using Q2_K = KQuant23<false>;
using Q3_K = KQuant23<true>;

// Q4_K / Q5_K: d, dmin, scales[12], [qh[32],] qs[128]: (d sc) q - dmin m per sub-block of 32;
// Q5_K's fifth bit of value 32 sb + l is bit sb of qh[l].
template <bool Fifth>
struct KQuant45 {
  static constexpr uint32_t kId = Fifth ? 13 : 12;
  static constexpr int kValues = 256, kBytes = Fifth ? 176 : 144, kQs = Fifth ? 48 : 16;
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
    VI scales[NG][3], qh[8][NG];
    for (int g = 0; g < NG; ++g) {
      VI dd;
      Dwords(base, off[g], 0, dd, scales[g][0]);
      Dwords(base, off[g], 8, scales[g][1], scales[g][2]);
      d[g] = HalfToFloat(Bits(dd, 0, 0xFFFF));
      dmin[g] = HalfToFloat(Bits(dd, 16, 0xFFFF));
      if constexpr (Fifth)
        for (int i = 0; i < 8; i += 2) Dwords(base, off[g], 16 + 4 * i, qh[i][g], qh[i + 1][g]);
    }
    for (int a = 0; a < 4; ++a) {
      VI qs[8][NG];
      for (int i = 0; i < 8; i += 2)
        for (int g = 0; g < NG; ++g) Dwords(base, off[g], kQs + 32 * a + 4 * i, qs[i][g], qs[i + 1][g]);
      for (int t = 0; t < 2; ++t) {  // sub-block 2a + t: nibble t of qs[32 a + l]
        VF dl[NG], ml[NG];
        for (int g = 0; g < NG; ++g) {
          VI sc, m;
          ScaleMin(scales[g], 2 * a + t, sc, m);
          dl[g] = hn::Mul(d[g], Float(sc));
          ml[g] = hn::Mul(dmin[g], Float(m));
        }
        for (int i = 0; i < 8; ++i) {
          VI q[NG];
          for (int g = 0; g < NG; ++g) {
            q[g] = Bits(qs[i][g], 4 * t, 0x0F0F0F0F);
            if constexpr (Fifth) q[g] = hn::Or(q[g], hn::ShiftLeft<4>(Bits(qh[i][g], 2 * a + t, 0x01010101)));
          }
          // dl q - ml fused: dl q is exact (11 bits of float16 d, 6 of sc, 4 or 5 of q), so the
          // one rounding of the difference is ggml's, NaN and infinity cases alike.
          FeedFour<NG>(k0 + 64 * a + 32 * t + 4 * i, s,
                       [&](int g, int b) { return hn::MulSub(dl[g], Float(Byte(q[g], b)), ml[g]); });
        }
      }
    }
  }
};
using Q4_K = KQuant45<false>;
using Q5_K = KQuant45<true>;

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
            FeedFour<NG>(k0 + 128 * a + 32 * q + 4 * i, s, [&](int g, int b) {
              return hn::Mul(dsc[g], Float(hn::Sub(Byte(six[g], b), hn::Set(DI(), 32))));
            });
          }
        }
      }
    }
  }
};

// The 32-value blocks: d[, m][, qh (Q5)], qs[16]; value 16 t + l is nibble t of qs[l] (its fifth
// bit bit 16 t + l of qh). The weight is d (q - 2^(Width - 1)) (Q4_0, Q5_0: q ^ 2^(Width - 1) read
// as a signed Width-bit number is that difference, exactly), d q + m (Q4_1, Q5_1: d q exact, 16
// bits at most, so fused as ggml's one rounding of the sum) or d kIq4Values[q] (IQ4_NL).
enum class Level { kOffset, kMin, kIq4 };
template <uint32_t Id, int Bytes, int QhAt, int QsAt, Level L>
struct Block32 {
  static constexpr uint32_t kId = Id;
  static constexpr int kValues = 32, kBytes = Bytes, kWidth = L == Level::kOffset ? (QhAt ? 5 : 4) : 8;
  // The values 16 t + 4 i + [0, 4) as a signed kWidth-bit number per byte.
  static HWY_INLINE VI Quants(VI qs, VI qh, int t, int i) {
    const DI di;
    VI q = Bits(qs, 4 * t, 0x0F0F0F0F);
    // Bits 16 t + 4 i + b of qh to bit 4 of byte b: the shifted copies of the multiply do not
    // overlap, so the product is their OR.
    if constexpr (QhAt > 0) {
      const VI spread = hn::Mul(Bits(qh, 16 * t + 4 * i, 0x0F), hn::Set(di, 0x02040810));
      q = hn::Or(q, hn::And(spread, hn::Set(di, 0x10101010)));
    }
    if constexpr (L == Level::kOffset) return hn::Xor(q, hn::Set(di, 0x01010101 << (kWidth - 1)));
    if constexpr (L == Level::kIq4) return Iq4Bytes(q);
    return q;
  }
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG], m[NG];
    VI qh[NG], qs[4][NG];
    for (int g = 0; g < NG; ++g) {
      const VI dm = Dword(base, off[g], 0);
      d[g] = HalfToFloat(Bits(dm, 0, 0xFFFF));
      if constexpr (L == Level::kMin) m[g] = HalfToFloat(Bits(dm, 16, 0xFFFF));
      qh[g] = QhAt > 0 ? Dword(base, off[g], QhAt) : hn::Zero(DI());
      Dwords(base, off[g], QsAt, qs[0][g], qs[1][g]);
      Dwords(base, off[g], QsAt + 8, qs[2][g], qs[3][g]);
    }
    for (int t = 0; t < 2; ++t)
      for (int i = 0; i < 4; ++i) {
        VI q[NG];
        for (int g = 0; g < NG; ++g) q[g] = Quants(qs[i][g], qh[g], t, i);
        FeedFour<NG>(k0 + 16 * t + 4 * i, s, [&](int g, int b) {
          const VF v = Float(SignedBits(q[g], 8 * b, kWidth));
          if constexpr (L == Level::kMin) return hn::MulAdd(d[g], v, m[g]);
          return hn::Mul(d[g], v);
        });
      }
  }
};
using Q4_0 = Block32<2, 18, 0, 2, Level::kOffset>;
using Q4_1 = Block32<3, 20, 0, 4, Level::kMin>;
using Q5_0 = Block32<6, 22, 2, 6, Level::kOffset>;
using Q5_1 = Block32<7, 24, 4, 8, Level::kMin>;
using IQ4_NL = Block32<20, 18, 0, 2, Level::kIq4>;

struct IQ4_XS {  // d, scales_h, scales_l[4], qs[128]: (d (ls - 32)) kIq4Values[q] per sub-block of 32
  static constexpr uint32_t kId = 23;
  static constexpr int kValues = 256, kBytes = 136;
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VF d[NG];
    VI dh[NG], low[NG];  // d and scales_h; scales_l
    for (int g = 0; g < NG; ++g) {
      Dwords(base, off[g], 0, dh[g], low[g]);
      d[g] = HalfToFloat(Bits(dh[g], 0, 0xFFFF));
    }
    for (int sb = 0; sb < 8; ++sb) {  // value 32 sb + 16 t + l: nibble t of qs[16 sb + l]
      VF dl[NG];
      VI qs[4][NG];
      for (int g = 0; g < NG; ++g) {
        const VI ls = hn::Or(Bits(low[g], 4 * sb, 0x0F), hn::ShiftLeft<4>(Bits(dh[g], 16 + 2 * sb, 3)));
        dl[g] = hn::Mul(d[g], Float(hn::Sub(ls, hn::Set(DI(), 32))));
        Dwords(base, off[g], 8 + 16 * sb, qs[0][g], qs[1][g]);
        Dwords(base, off[g], 16 + 16 * sb, qs[2][g], qs[3][g]);
      }
      for (int t = 0; t < 2; ++t)
        for (int i = 0; i < 4; ++i) {
          VI v[NG];
          for (int g = 0; g < NG; ++g) v[g] = Iq4Bytes(Bits(qs[i][g], 4 * t, 0x0F0F0F0F));
          FeedFour<NG>(k0 + 32 * sb + 16 * t + 4 * i, s, [&](int g, int b) { return hn::Mul(dl[g], Float(SignedByte(v[g], b))); });
        }
    }
  }
};

// F16 / BF16 (the upper 16 bits of a float32): two values per dword.
template <bool Brain>
struct Pair16 {
  static constexpr uint32_t kId = Brain ? 30 : 1;
  static constexpr int kValues = 2, kBytes = 4;
  static HWY_INLINE VF Value(VI pair, int half) {
    if constexpr (Brain)
      return hn::BitCast(DF(), half ? hn::And(pair, hn::Set(DI(), static_cast<int32_t>(0xFFFF0000u)))
                                    : hn::ShiftLeft<16>(pair));
    return HalfToFloat(Bits(pair, 16 * half, 0xFFFF));
  }
  template <int NG, class S>
  static HWY_INLINE void Step(const uint8_t* base, const RowOffsets (&off)[NG], int64_t k0, S& s) {
    VI pair[NG];
    for (int g = 0; g < NG; ++g) pair[g] = Dword(base, off[g], 0);
    for (int half = 0; half < 2; ++half) {
      VF w[NG];
      for (int g = 0; g < NG; ++g) w[g] = Value(pair[g], half);
      s.Feed(k0 + half, w);
    }
  }
};
using F16 = Pair16<false>;
using BF16 = Pair16<true>;

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
template <class T>
constexpr Decoder decoder() {
  return {T::kId, T::kValues, &Rows<T>};
}
constexpr Decoder kDecoders[] = {decoder<Q8_0>(), decoder<Q4_K>(),   decoder<Q5_K>(),   decoder<Q6_K>(),
                                 decoder<Q4_0>(), decoder<Q4_1>(),   decoder<Q5_0>(),   decoder<Q5_1>(),
                                 decoder<IQ4_NL>(), decoder<IQ4_XS>(), decoder<F16>(),  decoder<Q2_K>(),
                                 decoder<Q3_K>(), decoder<BF16>()};

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
