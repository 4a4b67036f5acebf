// Highway's dynamic dispatch compiles this file once per target (foreach_target.h
// re-includes it), then HWY_DYNAMIC_DISPATCH picks the best one at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/softmax_row.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <limits>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "attention/softmax_row.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
HWY_INLINE hn::Mask<D> allowedMask(D d, const uint8_t* allowed) {
  const hn::Rebind<uint8_t, D> d8;
  const hn::RebindToUnsigned<D> du;
  return hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, allowed)), hn::Zero(du)));
}

// Columns [begin, end) in steps of Lanes(d); the accumulators stay in registers and are
// reduced once at the end. Called with full vectors, then with one lane for the tail.
template <class D>
HWY_INLINE void scaleMask(D d, const float* raw, const uint8_t* allowed, int64_t begin, int64_t end,
                          float scale, float fill, float* scores, float& row_max, int64_t& count) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto vmax = hn::Set(d, row_max);
  for (int64_t j = begin; j < end; j += lanes) {
    const auto m = allowedMask(d, allowed + j);
    const auto s = hn::Mul(hn::LoadU(d, raw + j), hn::Set(d, scale));
    hn::StoreU(hn::IfThenElse(m, s, hn::Set(d, fill)), d, scores + j);
    vmax = hn::IfThenElse(m, hn::Max(vmax, s), vmax);
    count += static_cast<int64_t>(hn::CountTrue(d, m));
  }
  row_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
}

template <class D>
HWY_INLINE float expMasked(D d, const float* scores, const uint8_t* allowed, int64_t begin, int64_t end,
                           float row_max, float* probs) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto vsum = hn::Zero(d);
  for (int64_t j = begin; j < end; j += lanes) {
    const auto m = allowedMask(d, allowed + j);
    const auto e = hn::IfThenElseZero(m, hn::Exp(d, hn::Sub(hn::LoadU(d, scores + j), hn::Set(d, row_max))));
    hn::StoreU(e, d, probs + j);
    vsum = hn::Add(vsum, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, vsum));
}

template <class D>
HWY_INLINE void multiply(D d, int64_t begin, int64_t end, float factor, float* values) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = begin; j < end; j += lanes) {
    hn::StoreU(hn::Mul(hn::LoadU(d, values + j), hn::Set(d, factor)), d, values + j);
  }
}

RowSoftmax ScaleMaskSoftmaxRow(const float* raw, const uint8_t* allowed, int64_t n, float scale, float fill,
                               float* scores, float* probs) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t body = n - n % lanes;  // full vectors in [0, body), single lanes after
  RowSoftmax row;
  float row_max = -std::numeric_limits<float>::infinity();
  scaleMask(d, raw, allowed, 0, body, scale, fill, scores, row_max, row.allowed);
  scaleMask(d1, raw, allowed, body, n, scale, fill, scores, row_max, row.allowed);
  if (row.allowed == 0) return row;
  const float sum = expMasked(d, scores, allowed, 0, body, row_max, probs) +
                    expMasked(d1, scores, allowed, body, n, row_max, probs);
  multiply(d, 0, body, 1.0f / sum, probs);
  multiply(d1, body, n, 1.0f / sum, probs);
  row.max = row_max;
  row.sum = sum;
  return row;
}

// out[j] = exp(x[j] - shift) in double, full vectors then one lane at a time; their sum.
double ExpShiftedInto(const float* x, int64_t n, double shift, double* out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const auto shift_v = hn::Set(dd, shift);
  auto sums = hn::Zero(dd);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto e = hn::Exp(dd, hn::Sub(hn::PromoteTo(dd, hn::LoadU(df, x + j)), shift_v));
    hn::StoreU(e, dd, out + j);
    sums = hn::Add(sums, e);
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, sums));
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> f1;
  for (; j < n; ++j) {
    const auto e = hn::Exp(d1, hn::Sub(hn::PromoteTo(d1, hn::LoadU(f1, x + j)), hn::Set(d1, shift)));
    hn::StoreU(e, d1, out + j);
    sum += hn::GetLane(e);
  }
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(ScaleMaskSoftmaxRow);

RowSoftmax scaleMaskSoftmaxRow(const float* raw, const uint8_t* allowed, int64_t n, float scale, float fill,
                               float* scores, float* probs) {
  return HWY_DYNAMIC_DISPATCH(ScaleMaskSoftmaxRow)(raw, allowed, n, scale, fill, scores, probs);
}

HWY_EXPORT(ExpShiftedInto);

double expShiftedInto(const float* x, int64_t n, double shift, double* out) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftedInto)(x, n, shift, out);
}
}  // namespace attnscope
#endif
