// Sums over one scored probability row that the head metrics need, for rows that are
// never stored whole (the tiled overview streams them): vectorised with Google Highway
// (runtime dispatch) and accumulated in double, as the full path's head metrics are.
#pragma once

#include <cstdint>

namespace attnscope {

struct RowMoments {
  double mass = 0;            // sum p
  double weighted_logit = 0;  // sum p (s - max): the row's entropy is -(this + mass ln(1/sum)) nats
  double distance = 0;        // sum p |i - j|
  float max_prob = 0;         // max p
};

// Adds keys [begin, end) of query row i: scores and probs as scoreRow wrote them (indexed by
// key), row_max the row's largest allowed score. Keys with p = 0 (masked, or underflowed)
// add nothing, so a -inf fill never turns into NaN.
void addRowMoments(const float* scores, const float* probs, int64_t begin, int64_t end, float row_max, int64_t i,
                   RowMoments& moments);

}  // namespace attnscope
