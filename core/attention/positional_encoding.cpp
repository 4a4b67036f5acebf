#include "attention/positional_encoding.h"

#include <cmath>
#include <string>

namespace attnscope {

Tensor positionalEncoding(int64_t max_len, int64_t d_model) {
  if (max_len < 0 || d_model < 1) {
    throw InputError("positional encoding needs max_len >= 0 and d_model >= 1, got " +
                     std::to_string(max_len) + " and " + std::to_string(d_model));
  }
  Tensor pe({max_len, d_model});
  // Computed in double (torch computes in float32; the two agree to ~1e-4 at long positions).
  const double log_step = -(std::log(10000.0) / static_cast<double>(d_model));
  for (int64_t p = 0; p < max_len; ++p) {
    for (int64_t col = 0; col < d_model; col += 2) {
      const double angle = static_cast<double>(p) * std::exp(static_cast<double>(col) * log_step);
      pe.data[p * d_model + col] = static_cast<float>(std::sin(angle));
      // odd d_model: the last even column has no cos partner (floor(d/2) cos columns)
      if (col + 1 < d_model) pe.data[p * d_model + col + 1] = static_cast<float>(std::cos(angle));
    }
  }
  return pe;
}

}  // namespace attnscope
