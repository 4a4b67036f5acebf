// Every bad input to runAttention gives an InputError whose one line names the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "attention/attention.h"
#include "reference.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

// B=2, L=3, S=4, Dq=5, Dk=6, Dv=7, D=8, H=2
AttentionInputs goodInputs() {
  std::mt19937 rng(7);
  AttentionInputs in;
  in.query = testing::randomNormal({2, 3, 5}, rng);
  in.key = testing::randomNormal({2, 4, 6}, rng);
  in.value = testing::randomNormal({2, 4, 7}, rng);
  in.w_q = testing::randomNormal({8, 5}, rng);
  in.w_k = testing::randomNormal({8, 6}, rng);
  in.w_v = testing::randomNormal({8, 7}, rng);
  in.w_o = testing::randomNormal({8, 8}, rng);
  in.b_q = in.b_k = in.b_v = in.b_o = Tensor({8}, 0.1f);
  return in;
}

struct BadCase {
  const char* name;
  std::function<void(AttentionInputs&, AttentionOptions&)> mutate;
  const char* message;  // substring of the error
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

const BadCase kBadCases[] = {
    {"D_not_divisible", [](AttentionInputs&, AttentionOptions& o) { o.heads = 3; }, "D=8 is not divisible by H=3"},
    {"D10_H3",
     [](AttentionInputs& in, AttentionOptions& o) {
       in.w_q = Tensor({10, 5});
       in.w_k = Tensor({10, 6});
       in.w_v = Tensor({10, 7});
       in.w_o = Tensor({10, 10});
       in.b_q = in.b_k = in.b_v = in.b_o = Tensor();
       o.heads = 3;
     },
     "D=10 is not divisible by H=3"},
    {"heads_zero", [](AttentionInputs&, AttentionOptions& o) { o.heads = 0; }, "heads must be >= 1, got H=0"},
    {"kv_length_mismatch", [](AttentionInputs& in, AttentionOptions&) { in.value = Tensor({2, 5, 7}); },
     "key and value lengths differ: key has S=4, value has S=5"},
    {"key_batch", [](AttentionInputs& in, AttentionOptions&) { in.key = Tensor({1, 4, 6}); },
     "key has batch size 1 but query has B=2"},
    {"value_batch", [](AttentionInputs& in, AttentionOptions&) { in.value = Tensor({3, 4, 7}); },
     "value has batch size 3 but query has B=2"},
    {"query_rank", [](AttentionInputs& in, AttentionOptions&) { in.query = Tensor({3, 5}); },
     "query must be [B, L, Dq], got shape [3, 5]"},
    {"query_empty", [](AttentionInputs& in, AttentionOptions&) { in.query = Tensor({2, 0, 5}); },
     "query is empty: shape [2, 0, 5]"},
    {"query_data_size",
     [](AttentionInputs& in, AttentionOptions&) { in.query.data.pop_back(); },
     "query holds 29 values but its shape [2, 3, 5] needs 30"},
    {"w_q_vs_Dq", [](AttentionInputs& in, AttentionOptions&) { in.w_q = Tensor({8, 4}); },
     "w_q has shape [8, 4] but expected [8, 5] (D=8, query has Dq=5)"},
    {"w_k_vs_Dk", [](AttentionInputs& in, AttentionOptions&) { in.w_k = Tensor({8, 5}); },
     "w_k has shape [8, 5] but expected [8, 6] ([G*d, Dk], key has Dk=6)"},
    {"w_v_vs_Dv", [](AttentionInputs& in, AttentionOptions&) { in.w_v = Tensor({8, 6}); },
     "w_v has shape [8, 6] but expected [G*d, Dv] = [8, 7] (G=2 K/V heads of d=4), like w_k"},
    {"w_k_vs_D", [](AttentionInputs& in, AttentionOptions&) { in.w_k = Tensor({6, 6}); },
     "w_k has 6 rows, not a multiple of the head size d=4 (D=8 / H=2)"},
    {"w_o_shape", [](AttentionInputs& in, AttentionOptions&) { in.w_o = Tensor({8, 4}); },
     "w_o has shape [8, 4] but expected [8, 8]"},
    {"w_q_rank", [](AttentionInputs& in, AttentionOptions&) { in.w_q = Tensor({8, 5, 1}); },
     "w_q must be [D, Dq], got shape [8, 5, 1]"},
    {"bias_shape", [](AttentionInputs& in, AttentionOptions&) { in.b_v = Tensor({7}); },
     "b_v has shape [7] but expected [8]"},
    {"nan_query", [](AttentionInputs& in, AttentionOptions&) { in.query.data[4] = kNaN; },
     "query contains NaN at flat index 4"},
    {"inf_key", [](AttentionInputs& in, AttentionOptions&) { in.key.data[0] = -kInf; },
     "key contains Inf at flat index 0"},
    {"nan_value", [](AttentionInputs& in, AttentionOptions&) { in.value.data[9] = kNaN; }, "value contains NaN"},
    {"nan_weight", [](AttentionInputs& in, AttentionOptions&) { in.w_o.data[1] = kNaN; }, "w_o contains NaN"},
    {"inf_bias", [](AttentionInputs& in, AttentionOptions&) { in.b_q.data[2] = kInf; }, "b_q contains Inf"},
    {"attn_mask_shape", [](AttentionInputs& in, AttentionOptions&) { in.attn_mask = BoolTensor({4, 3}); },
     "attn_mask has shape [4, 3], expected [3, 4] or [2, 3, 4]"},
    {"key_padding_shape", [](AttentionInputs& in, AttentionOptions&) { in.key_padding = BoolTensor({2, 3}); },
     "key_padding has shape [2, 3], expected [2, 4]"},
    {"valid_lens_count", [](AttentionInputs& in, AttentionOptions&) { in.valid_lens = {1, 2, 3}; },
     "valid_lens has 3 entries but the batch size is B=2"},
    {"valid_lens_range", [](AttentionInputs& in, AttentionOptions&) { in.valid_lens = {1, 9}; },
     "valid_lens[1]=9 is outside [0, S=4]"},
    {"padding_without_lengths", [](AttentionInputs&, AttentionOptions& o) { o.mask.padding = true; },
     "mask: 'padding' needs valid_lens or key_padding"},
    {"dropout_one", [](AttentionInputs&, AttentionOptions& o) { o.dropout = 1.0f; }, "dropout p must be in [0, 1), got 1"},
    {"dropout_negative", [](AttentionInputs&, AttentionOptions& o) { o.dropout = -0.5f; },
     "dropout p must be in [0, 1), got -0.5"},
    {"dropout_nan", [](AttentionInputs&, AttentionOptions& o) { o.dropout = kNaN; }, "dropout p must be in [0, 1)"},
    {"window_negative", [](AttentionInputs&, AttentionOptions& o) { o.mask.window = -3; },
     "mask: window W must be >= 0, got -3"},
    {"prefix_negative", [](AttentionInputs&, AttentionOptions& o) { o.mask.prefix = -2; },
     "mask: prefix P must be >= 0, got -2"},
    {"segments_nonpositive", [](AttentionInputs&, AttentionOptions& o) { o.mask.segments = {2, -1}; },
     "mask: segment lengths must be positive, got -1"},
    {"custom_scale_inf",
     [](AttentionInputs&, AttentionOptions& o) {
       o.scale_mode = ScaleMode::Custom;
       o.custom_scale = kInf;
     },
     "scale must be a finite number"},
    {"query_tokens_count", [](AttentionInputs& in, AttentionOptions&) { in.query_tokens = {"a"}; },
     "query tokens: 1 labels for L=3"},
};

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, ThrowsOneLineNamingTheProblem) {
  AttentionInputs in = goodInputs();
  AttentionOptions o;
  o.heads = 2;
  GetParam().mutate(in, o);
  try {
    runAttention(in, o);
    FAIL() << "no error, expected: " << GetParam().message;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(GetParam().message), std::string::npos) << "got: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, BadInput, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(Validation, GoodInputsPass) {
  AttentionOptions o;
  o.heads = 2;
  EXPECT_NO_THROW(runAttention(goodInputs(), o));
}

TEST(Memory, EstimateGrowsWithScoresAndRefusesHugeJobs) {
  const uint64_t small = estimateTraceBytes(1, 128, 128, 512, 512, 512, 512, 8);
  // the four [B, H, L, S] float tensors alone
  EXPECT_GE(small, 4ull * 4 * 8 * 128 * 128);
  EXPECT_GT(estimateTraceBytes(1, 128, 128, 512, 512, 512, 512, 16), small);
  EXPECT_NO_THROW(checkMemory(small));
  try {
    checkMemory(estimateTraceBytes(64, 1 << 20, 1 << 20, 512, 512, 512, 512, 8));
    FAIL() << "a 64 x 1M x 1M job was accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("needs "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" GiB but only "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" GiB is available"), std::string::npos) << msg;
  }
}

TEST(Memory, LongSequencesAreRefused) {
  // L = S = 400000 with H = 1: the [B, H, L, S] tensors alone are 4 x 640 GB.
  const uint64_t needed = estimateTraceBytes(1, 400000, 400000, 8, 8, 8, 8, 1);
  EXPECT_GT(needed, 4ull * 4 * 400000 * 400000);
  EXPECT_THROW(checkMemory(needed), InputError);
}

}  // namespace
}  // namespace attnscope
