// Text inputs: tokenizer (UTF-8, CJK), positional encoding (seed 003), embeddings, weights.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "attention/positional_encoding.h"
#include "config/text_input.h"

namespace attnscope {
namespace {

using Tokens = std::vector<std::string>;

struct TokenCase {
  const char* text;
  Tokens tokens;
};

const TokenCase kTokenCases[] = {
    {"The cat sat", {"The", "cat", "sat"}},
    {"  spaced\tout \n words  ", {"spaced", "out", "words"}},
    {"", {}},
    {"   ", {}},
    {"我爱猫", {"我", "爱", "猫"}},
    {"I love 猫咪", {"I", "love", "猫", "咪"}},
    {"猫咪very可爱", {"猫", "咪", "very", "可", "爱"}},
    {"你好，世界。", {"你", "好", "，", "世", "界", "。"}},
    {"ＡＢ！", {"Ａ", "Ｂ", "！"}},             // fullwidth forms
    {"中\u3000文", {"中", "文"}},              // ideographic space separates
    {"カタカナ", {"カ", "タ", "カ", "ナ"}},
    {"café naïve", {"café", "naïve"}},        // accented Latin stays whole
    {"don't stop", {"don't", "stop"}},
    {"bad\xff" "byte", {"bad\xff" "byte"}},   // malformed UTF-8 kept, never crashes
    {"cut\xe7\x8c", {"cut\xe7\x8c"}},          // truncated sequence at the end
};

TEST(Tokenize, WhitespaceAndCjk) {
  for (const TokenCase& c : kTokenCases) EXPECT_EQ(tokenize(c.text), c.tokens) << "'" << c.text << "'";
}

// Seed 003: div_term = exp(arange(0, d, 2) * -(ln 10000 / d)); pe[:, 0::2] = sin, pe[:, 1::2] = cos.
TEST(PositionalEncoding, MatchesFormulaForOddAndEvenSizes) {
  for (int64_t d_model : {1, 2, 3, 7, 16, 33, 100, 512}) {
    const int64_t max_len = 60;
    const Tensor pe = positionalEncoding(max_len, d_model);
    ASSERT_EQ(pe.shape, (Shape{max_len, d_model}));
    const int64_t sin_cols = (d_model + 1) / 2, cos_cols = d_model / 2;
    for (int64_t p = 0; p < max_len; ++p) {
      for (int64_t i = 0; i < sin_cols; ++i) {
        const double div_term = std::exp(double(2 * i) * -(std::log(10000.0) / double(d_model)));
        ASSERT_NEAR(pe.data[p * d_model + 2 * i], std::sin(p * div_term), 1e-6) << d_model << " " << p << " " << i;
        if (i < cos_cols) {
          ASSERT_NEAR(pe.data[p * d_model + 2 * i + 1], std::cos(p * div_term), 1e-6);
        }
      }
    }
    // position 0: sin 0 = 0 on even columns, cos 0 = 1 on odd columns
    for (int64_t c = 0; c < d_model; ++c) EXPECT_EQ(pe.data[c], c % 2 == 0 ? 0.0f : 1.0f);
  }
  // the three equivalent div_term forms of seed 003 agree: 10000^(-2i/d)
  const Tensor pe = positionalEncoding(10, 8);
  EXPECT_NEAR(pe.data[5 * 8 + 2], std::sin(5 * std::pow(10000.0, -2.0 / 8)), 1e-6);
  EXPECT_THROW(positionalEncoding(4, 0), InputError);
}

TEST(TokenEmbedding, SeededPerTokenAndRoughlyStandardNormal) {
  const std::vector<float> cat = tokenEmbedding("cat", 64, 0);
  EXPECT_EQ(cat.size(), 64u);
  EXPECT_EQ(tokenEmbedding("cat", 64, 0), cat);  // same token, same vector
  EXPECT_NE(tokenEmbedding("cat", 64, 1), cat);  // other seed
  EXPECT_NE(tokenEmbedding("cats", 64, 0), cat);
  EXPECT_NE(tokenEmbedding("猫", 64, 0), cat);
  EXPECT_EQ(tokenEmbedding("cat", 7, 0).size(), 7u);
  // moments over many draws
  const std::vector<float> many = tokenEmbedding("statistics", 200000, 3);
  double mean = 0, var = 0;
  for (float x : many) mean += x;
  mean /= many.size();
  for (float x : many) var += (x - mean) * (x - mean);
  var /= many.size();
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
}

TEST(SeedDefaultWeights, PyTorchBoundsAndBiases) {
  AttentionInputs in;
  seedDefaultWeights(in, 32, 16, 24, 40, true, 9);
  EXPECT_EQ(in.w_q.shape, (Shape{32, 16}));
  EXPECT_EQ(in.w_k.shape, (Shape{32, 24}));
  EXPECT_EQ(in.w_v.shape, (Shape{32, 40}));
  EXPECT_EQ(in.w_o.shape, (Shape{32, 32}));
  struct Bound {
    const Tensor* w;
    double bound;
  };
  for (const Bound& b : {Bound{&in.w_q, std::sqrt(6.0 / 48)}, Bound{&in.w_k, std::sqrt(6.0 / 56)},
                         Bound{&in.w_v, std::sqrt(6.0 / 72)}, Bound{&in.w_o, 1.0 / std::sqrt(32.0)}}) {
    float lo = 1e9f, hi = -1e9f;
    for (float x : b.w->data) lo = std::min(lo, x), hi = std::max(hi, x);
    EXPECT_LE(hi, b.bound);
    EXPECT_GE(lo, -b.bound);
    EXPECT_GT(hi, 0.8 * b.bound);  // actually spread over the range
    EXPECT_LT(lo, -0.8 * b.bound);
  }
  EXPECT_EQ(in.b_q.shape, (Shape{32}));
  for (const Tensor* b : {&in.b_q, &in.b_k, &in.b_v, &in.b_o})
    for (float x : b->data) EXPECT_EQ(x, 0.0f);
  EXPECT_NE(in.w_q.data, std::vector<float>(in.w_q.data.size(), 0.0f));

  AttentionInputs again;
  seedDefaultWeights(again, 32, 16, 24, 40, true, 9);
  EXPECT_EQ(again.w_v.data, in.w_v.data);
  AttentionInputs no_bias;
  seedDefaultWeights(no_bias, 32, 16, 24, 40, false, 10);
  EXPECT_TRUE(no_bias.b_q.empty() && no_bias.b_k.empty() && no_bias.b_v.empty() && no_bias.b_o.empty());
  EXPECT_NE(no_bias.w_q.data, in.w_q.data);
  EXPECT_THROW(seedDefaultWeights(no_bias, 0, 4, 4, 4, false, 0), InputError);
}

}  // namespace
}  // namespace attnscope
