// Highway's dynamic dispatch compiles this file once per target (foreach_target.h
// re-includes it), then HWY_DYNAMIC_DISPATCH picks the best one at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/row_stats.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <cstdlib>

#include <hwy/highway.h>

#include "attention/row_stats.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Full float vectors, each split into two double halves; the tail one key at a time.
void AddRowMoments(const float* scores, const float* probs, int64_t begin, int64_t end, float row_max, int64_t i,
                   RowMoments& m) {
  int64_t j = begin;
#if HWY_TARGET != HWY_SCALAR  // one-lane vectors have no halves: the scalar tail does it all
  const hn::ScalableTag<float> d;
  const hn::Half<decltype(d)> dh;
  const hn::Repartition<double, decltype(d)> dd;  // Lanes(d) / 2 doubles
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), half = lanes / 2;
  auto mass = hn::Zero(dd), logit = hn::Zero(dd), distance = hn::Zero(dd);
  auto vmax = hn::Set(d, m.max_prob);
  const auto vrow_max = hn::Set(d, row_max), zero = hn::Zero(d);
  const auto query = hn::Set(dd, static_cast<double>(i)), step = hn::Set(dd, static_cast<double>(lanes));
  auto key_lo = hn::Iota(dd, static_cast<double>(begin)), key_hi = hn::Iota(dd, static_cast<double>(begin + half));
  for (; j + lanes <= end; j += lanes) {
    const auto p = hn::LoadU(d, probs + j);
    // s - max exactly as the score pass computed it before exp; 0 where p = 0.
    const auto x = hn::IfThenElseZero(hn::Gt(p, zero), hn::Sub(hn::LoadU(d, scores + j), vrow_max));
    vmax = hn::Max(vmax, p);
    const auto p_lo = hn::PromoteTo(dd, hn::LowerHalf(dh, p)), p_hi = hn::PromoteTo(dd, hn::UpperHalf(dh, p));
    const auto x_lo = hn::PromoteTo(dd, hn::LowerHalf(dh, x)), x_hi = hn::PromoteTo(dd, hn::UpperHalf(dh, x));
    mass = hn::Add(mass, hn::Add(p_lo, p_hi));
    logit = hn::MulAdd(p_lo, x_lo, hn::MulAdd(p_hi, x_hi, logit));
    distance = hn::MulAdd(p_lo, hn::Abs(hn::Sub(key_lo, query)), hn::MulAdd(p_hi, hn::Abs(hn::Sub(key_hi, query)), distance));
    key_lo = hn::Add(key_lo, step);
    key_hi = hn::Add(key_hi, step);
  }
  m.mass += hn::GetLane(hn::SumOfLanes(dd, mass));
  m.weighted_logit += hn::GetLane(hn::SumOfLanes(dd, logit));
  m.distance += hn::GetLane(hn::SumOfLanes(dd, distance));
  m.max_prob = hn::GetLane(hn::MaxOfLanes(d, vmax));
#endif
  for (; j < end; ++j) {
    const float p = probs[j];
    if (!(p > 0.0f)) continue;
    m.mass += p;
    m.weighted_logit += static_cast<double>(p) * static_cast<double>(scores[j] - row_max);
    m.distance += static_cast<double>(p) * static_cast<double>(std::llabs(i - j));
    m.max_prob = std::max(m.max_prob, p);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(AddRowMoments);

void addRowMoments(const float* scores, const float* probs, int64_t begin, int64_t end, float row_max, int64_t i,
                   RowMoments& moments) {
  HWY_DYNAMIC_DISPATCH(AddRowMoments)(scores, probs, begin, end, row_max, i, moments);
}
}  // namespace attnscope
#endif
