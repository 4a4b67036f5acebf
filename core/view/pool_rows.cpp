// foldRowMax / foldRowMaxAbs (view/pool_rows.h), vectorised with Google Highway (runtime
// dispatch, as view/map_range.cpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "view/pool_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <limits>

#include <hwy/highway.h>

#include "view/pool_rows.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Cells [begin, end) of `row` as read, in steps of Lanes(d); f(j, cells) folds lanes j...
template <class D, class Fold>
HWY_INLINE void forCells(D d, const RowCells& row, int64_t begin, int64_t end, const Fold& fold) {
  const hn::Rebind<uint8_t, D> d8;
  const hn::RebindToUnsigned<D> du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto masked = hn::Set(d, -std::numeric_limits<float>::infinity());
  const auto one = hn::Set(d, 1.0f);
  for (int64_t j = begin; j < end; j += lanes) {
    auto v = row.values ? hn::LoadU(d, row.values + j) : one;
    if (row.allowed)
      v = hn::IfThenElse(hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, row.allowed + j)), hn::Zero(du))), v,
                         masked);
    fold(j, v);
  }
}

template <class D>
HWY_INLINE void maxOf(D d, const RowCells& row, int64_t begin, int64_t end, float* best) {
  forCells(d, row, begin, end, [&](int64_t j, auto v) { hn::StoreU(hn::Max(hn::LoadU(d, best + j), v), d, best + j); });
}

template <class D>
HWY_INLINE void maxAbsOf(D d, const RowCells& row, int32_t index, int64_t begin, int64_t end, float* best, float* abs,
                         int32_t* first_row) {
  const hn::RebindToSigned<D> di;
  const auto masked = hn::Set(d, -std::numeric_limits<float>::infinity());
  const auto none = hn::Set(d, -1.0f);
  const auto r = hn::Set(di, index);
  forCells(d, row, begin, end, [&](int64_t j, auto v) {
    const auto a = hn::IfThenElse(hn::Eq(v, masked), none, hn::Abs(v));
    const auto larger = hn::Gt(a, hn::LoadU(d, abs + j));
    hn::StoreU(hn::IfThenElse(larger, a, hn::LoadU(d, abs + j)), d, abs + j);
    hn::StoreU(hn::IfThenElse(larger, v, hn::LoadU(d, best + j)), d, best + j);
    hn::StoreU(hn::IfThenElse(hn::RebindMask(di, larger), r, hn::LoadU(di, first_row + j)), di, first_row + j);
  });
}

void FoldRowMax(const RowCells& row, float* best) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t body = row.cols - row.cols % static_cast<int64_t>(hn::Lanes(d));  // full vectors, then single lanes
  maxOf(d, row, 0, body, best);
  maxOf(d1, row, body, row.cols, best);
}

void FoldRowMaxAbs(const RowCells& row, int32_t index, float* best, float* abs, int32_t* first_row) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t body = row.cols - row.cols % static_cast<int64_t>(hn::Lanes(d));
  maxAbsOf(d, row, index, 0, body, best, abs, first_row);
  maxAbsOf(d1, row, index, body, row.cols, best, abs, first_row);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(FoldRowMax);
HWY_EXPORT(FoldRowMaxAbs);

void foldRowMax(const RowCells& row, float* best) { HWY_DYNAMIC_DISPATCH(FoldRowMax)(row, best); }

void foldRowMaxAbs(const RowCells& row, int32_t row_index, float* best, float* abs, int32_t* first_row) {
  HWY_DYNAMIC_DISPATCH(FoldRowMaxAbs)(row, row_index, best, abs, first_row);
}
}  // namespace attnscope
#endif
