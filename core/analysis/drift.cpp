#include "analysis/drift.h"

#include <algorithm>
#include <cmath>

namespace attnscope {
namespace {

// log-softmax of logits [n] in float64.
std::vector<double> logSoftmax(const float* logits, int64_t n) {
  const double top = *std::max_element(logits, logits + n);
  double sum = 0.0;
  for (int64_t v = 0; v < n; ++v) sum += std::exp(double(logits[v]) - top);
  const double log_sum = top + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) out[v] = double(logits[v]) - log_sum;
  return out;
}

// x log(x / m), 0 when x is 0 (a masked key in both maps, or in one: then m = x / 2).
double klTerm(double x, double m) { return x > 0.0 ? x * std::log(x / m) : 0.0; }

}  // namespace

AttentionDrift::AttentionDrift(int64_t layers, int64_t heads)
    : layers_(layers), heads_(heads), max_abs_(layers * heads, 0.0), js_sum_(layers * heads, 0.0), rows_(layers * heads, 0) {}

void AttentionDrift::add(int64_t layer, int64_t head, const float* a, const float* b, int64_t rows, int64_t cols) {
  const int64_t k = layer * heads_ + head;
  for (int64_t i = 0; i < rows; ++i) {
    const float* p = a + i * cols;
    const float* q = b + i * cols;
    for (int64_t j = 0; j < cols; ++j) max_abs_[k] = std::max(max_abs_[k], std::abs(double(p[j]) - double(q[j])));
    js_sum_[k] += jensenShannon(p, q, cols);
  }
  rows_[k] += rows;
}

Tensor AttentionDrift::maxAbs() const {
  Tensor t({layers_, heads_});
  for (size_t k = 0; k < max_abs_.size(); ++k) t.data[k] = static_cast<float>(max_abs_[k]);
  return t;
}

Tensor AttentionDrift::js() const {
  Tensor t({layers_, heads_});
  for (size_t k = 0; k < js_sum_.size(); ++k) t.data[k] = rows_[k] ? static_cast<float>(js_sum_[k] / double(rows_[k])) : 0.0f;
  return t;
}

double jensenShannon(const float* p, const float* q, int64_t n) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const double m = 0.5 * (double(p[j]) + double(q[j]));
    sum += 0.5 * klTerm(p[j], m) + 0.5 * klTerm(q[j], m);
  }
  return std::max(0.0, sum);
}

NextTokenDrift nextTokenDrift(const float* logits_a, const float* logits_b, int64_t vocab) {
  const std::vector<double> la = logSoftmax(logits_a, vocab), lb = logSoftmax(logits_b, vocab);
  NextTokenDrift d;
  d.top_a = std::max_element(logits_a, logits_a + vocab) - logits_a;
  d.top_b = std::max_element(logits_b, logits_b + vocab) - logits_b;
  for (int64_t v = 0; v < vocab; ++v) d.kl += std::exp(la[v]) * (la[v] - lb[v]);
  d.kl = std::max(0.0, d.kl);
  return d;
}

}  // namespace attnscope
