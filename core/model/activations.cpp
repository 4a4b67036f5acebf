// Highway's dynamic dispatch compiles this file once per target (foreach_target.h
// re-includes it), then HWY_DYNAMIC_DISPATCH picks the best one at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/activations.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <cmath>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "model/activations.h"

HWY_BEFORE_NAMESPACE();
namespace attnscope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V>
HWY_INLINE V act(D d, V x, Activation kind) {
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f);
  if (kind == Activation::GeluTanh) {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    const auto inner = hn::Mul(hn::Set(d, static_cast<float>(std::sqrt(2.0 / M_PI))),
                               hn::MulAdd(hn::Mul(hn::Set(d, 0.044715f), hn::Mul(x, x)), x, x));
    return hn::Mul(hn::Mul(half, x), hn::Add(one, hn::Tanh(d, inner)));
  }
  return hn::Div(x, hn::Add(one, hn::Exp(d, hn::Neg(x))));  // SiLU
}

float scalarAct(float x, Activation kind) {
  switch (kind) {
    case Activation::GeluErf: return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(M_SQRT1_2)));
    case Activation::GeluTanh: {
      const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    }
    case Activation::Silu: return x / (1.0f + std::exp(-x));
  }
  return x;
}

// gate null: values = act(values); else values *= act(gate). Full vectors, then one lane.
template <class D>
HWY_INLINE void sweep(D d, Activation kind, const float* gate, float* values, int64_t begin, int64_t end) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = begin; j < end; j += lanes) {
    const auto v = hn::LoadU(d, values + j);
    hn::StoreU(gate ? hn::Mul(v, act(d, hn::LoadU(d, gate + j), kind)) : act(d, v, kind), d, values + j);
  }
}

void Apply(Activation kind, const float* gate, float* values, int64_t n) {
  if (kind == Activation::GeluErf) {  // no vector erf
    for (int64_t j = 0; j < n; ++j) values[j] = gate ? values[j] * scalarAct(gate[j], kind) : scalarAct(values[j], kind);
    return;
  }
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t body = n - n % static_cast<int64_t>(hn::Lanes(d));
  sweep(d, kind, gate, values, 0, body);
  sweep(d1, kind, gate, values, body, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnscope
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnscope {
HWY_EXPORT(Apply);

namespace {

// Pieces on both threads, each a multiple of any vector width: every value takes the path it
// takes in one call (whole vectors, then the last few one by one). The loop stays out of the
// per-target code (clang 14 cannot compile vector code outlined into an OpenMP region).
void applyInPieces(Activation kind, const float* gate, float* values, int64_t n) {
  constexpr int64_t kPiece = int64_t{1} << 14;
  const int64_t pieces = (n + kPiece - 1) / kPiece;
#pragma omp parallel for if (pieces > 1)
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t begin = p * kPiece;
    HWY_DYNAMIC_DISPATCH(Apply)(kind, gate ? gate + begin : nullptr, values + begin, std::min(kPiece, n - begin));
  }
}

}  // namespace

void activateAll(Activation kind, float* values, int64_t n) { applyInPieces(kind, nullptr, values, n); }
void gateAll(Activation kind, const float* gate, float* up, int64_t n) { applyInPieces(kind, gate, up, n); }
}  // namespace attnscope
#endif
