// mapRange, vectorised with Google Highway (runtime dispatch, as attention/softmax_row.cpp):
// the app measures every map of every result, 4M cells per map at L = S = 2048.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "view/map_range.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <limits>

#include <hwy/highway.h>

#include "view/view_model.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Cells [begin, end) in steps of Lanes(d) into the running range; a cell that does not
// count (masked, or not finite) contributes neutral values. Called with full vectors,
// then with one lane for the tail.
template <class D>
HWY_INLINE void accumulate(D d, const float* values, const uint8_t* allowed, int64_t begin, int64_t end,
                           MapRange& range) {
  const hn::Rebind<uint8_t, D> d8;
  const hn::RebindToUnsigned<D> du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const auto largest = hn::Set(d, std::numeric_limits<float>::max());
  auto low = inf, high = hn::Neg(inf), abs_max = hn::Set(d, range.abs_max), min_positive = inf;
  int64_t count = 0;
  for (int64_t c = begin; c < end; c += lanes) {
    const auto v = hn::LoadU(d, values + c);
    const auto abs = hn::Abs(v);
    auto counts = hn::Le(abs, largest);  // finite (NaN compares false)
    if (allowed)
      counts = hn::And(counts, hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, allowed + c)), hn::Zero(du))));
    low = hn::Min(low, hn::IfThenElse(counts, v, inf));
    high = hn::Max(high, hn::IfThenElse(counts, v, hn::Neg(inf)));
    abs_max = hn::Max(abs_max, hn::IfThenElseZero(counts, abs));
    min_positive = hn::Min(min_positive, hn::IfThenElse(hn::And(counts, hn::Gt(v, hn::Zero(d))), v, inf));
    count += static_cast<int64_t>(hn::CountTrue(d, counts));
  }
  if (count == 0) return;
  const float lo = hn::GetLane(hn::MinOfLanes(d, low)), hi = hn::GetLane(hn::MaxOfLanes(d, high));
  range.min = range.allowed_cells > 0 ? std::min(range.min, lo) : lo;
  range.max = range.allowed_cells > 0 ? std::max(range.max, hi) : hi;
  range.abs_max = hn::GetLane(hn::MaxOfLanes(d, abs_max));
  range.min_positive = std::min(range.min_positive, hn::GetLane(hn::MinOfLanes(d, min_positive)));
  range.allowed_cells += count;
}

MapRange MapRangeOf(const float* values, const uint8_t* allowed, int64_t cells) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t body = cells - cells % lanes;  // full vectors in [0, body), single lanes after
  MapRange range;
  accumulate(d, values, allowed, 0, body, range);
  accumulate(d1, values, allowed, body, cells, range);
  return range;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(MapRangeOf);

MapRange mapRange(const float* values, const uint8_t* allowed, int64_t cells) {
  return HWY_DYNAMIC_DISPATCH(MapRangeOf)(values, allowed, cells);
}
}  // namespace attnscope
#endif
