// Large maps are computed a block at a time in cache and streamed into place (HeadSlot::stream,
// streamCopy): the values are those of the plain path, bit for bit, over every mask shape,
// both fills, transformed scores, dropout and the normalisers; streamCopy at any alignment.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attention/kernel.h"
#include "attention/row_gemm.h"

namespace attnscope {
namespace {

struct StreamCase {
  std::string name;
  std::function<bool(int64_t, int64_t)> allowed;  // (query row, key)
  MaskFill fill;
  float softcap;
  float dropout;
};

struct HeadOut {
  std::vector<float> scores, probs, dropped, ctx;
  std::vector<RowSoftmax> normalisers;
};

class StreamedMaps : public testing::TestWithParam<StreamCase> {};

TEST_P(StreamedMaps, EqualThePlainPathBitForBit) {
  const StreamCase& c = GetParam();
  const int64_t L = 517, S = 515, d = 24;  // a partial last row block, odd row lengths
  ASSERT_TRUE(streamedMaps(L, S));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> q(L * d), k(S * d), v(S * d);
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = normal(rng);
  std::vector<uint8_t> allowed(L * S);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) allowed[i * S + j] = c.allowed(i, j) ? 1 : 0;
  const std::vector<RowSpan> spans = rowSpans(allowed.data(), L, S);
  ScoreRule rule;
  rule.scale = 0.2f;
  rule.softcap = c.softcap;
  rule.fill = c.fill;
  auto run = [&](bool stream) {
    HeadOut o;
    o.scores.assign(L * S, 7.0f), o.probs.assign(L * S, 7.0f), o.dropped.assign(L * S, 7.0f);
    o.ctx.assign(L * d, 7.0f), o.normalisers.resize(L);
    HeadSlot s;
    s.q = q.data(), s.k = k.data(), s.v = v.data(), s.c = d;
    s.allowed = allowed.data(), s.spans = spans.data();
    s.scores = o.scores.data(), s.probs = o.probs.data();
    s.dropped = c.dropout > 0.0f ? o.dropped.data() : nullptr;
    s.ctx = o.ctx.data(), s.ld_ctx = d;
    s.normalisers = o.normalisers.data();
    s.stream = stream;
    attendHead(s, L, S, rule, DropoutRule{c.dropout, 11});
    return o;
  };
  const HeadOut plain = run(false), streamed = run(true);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(plain.scores, streamed.scores));
  EXPECT_TRUE(same(plain.probs, streamed.probs));
  EXPECT_TRUE(same(plain.dropped, streamed.dropped));
  EXPECT_TRUE(same(plain.ctx, streamed.ctx));
  for (int64_t i = 0; i < L; ++i) {
    ASSERT_EQ(plain.normalisers[i].allowed, streamed.normalisers[i].allowed) << i;
    ASSERT_EQ(plain.normalisers[i].max, streamed.normalisers[i].max) << i;
    ASSERT_EQ(plain.normalisers[i].sum, streamed.normalisers[i].sum) << i;
  }
  EXPECT_NE(plain.probs[S - 1], 7.0f);  // every cell written
}

INSTANTIATE_TEST_SUITE_P(
    Masks, StreamedMaps,
    testing::Values(StreamCase{"causal", [](int64_t i, int64_t j) { return j <= i; }, MaskFill::NegInf, 0.0f, 0.0f},
                    StreamCase{"window", [](int64_t i, int64_t j) { return j <= i && i - j < 37; }, MaskFill::NegInf, 0.0f, 0.0f},
                    StreamCase{"none", [](int64_t, int64_t) { return true; }, MaskFill::NegInf, 0.0f, 0.0f},
                    StreamCase{"padding_softcap", [](int64_t, int64_t j) { return j < 400; }, MaskFill::NegInf, 5.0f, 0.0f},
                    StreamCase{"rows_fully_masked_neg_billion", [](int64_t i, int64_t j) { return i % 7 != 3 && j <= i; },
                               MaskFill::NegBillion, 0.0f, 0.0f},
                    StreamCase{"rows_fully_masked_dropout", [](int64_t i, int64_t j) { return i % 7 != 3 && j >= i / 2; },
                               MaskFill::NegInf, 0.0f, 0.25f}),
    [](const testing::TestParamInfo<StreamCase>& info) { return info.param.name; });

TEST(StreamCopy, CopiesAnyLengthAtAnyAlignment) {
  std::vector<float> from(300), to(310);
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<float>(i) + 0.5f;
  for (int64_t offset = 0; offset < 9; ++offset)
    for (int64_t n : {0, 1, 7, 16, 17, 100, 255, 300}) {
      std::fill(to.begin(), to.end(), -1.0f);
      streamCopy(from.data(), n, to.data() + offset);
      for (int64_t i = 0; i < static_cast<int64_t>(to.size()); ++i) {
        const float want = i >= offset && i < offset + n ? from[i - offset] : -1.0f;
        ASSERT_EQ(to[i], want) << "offset " << offset << " n " << n << " at " << i;
      }
    }
}

}  // namespace
}  // namespace attnscope
