// .npy reading/writing and bundle loading: round trips, hand-made headers of every
// format version, and the one-line errors for each kind of bad file.
// (NumPy itself reading our files is checked in tests/cli/test_compute.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/bundle.h"
#include "tensor/npy.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

class NpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnscope-npy-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void writeBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }

  // A .npy file with a hand-written header dict and payload.
  static std::string npyFile(const std::string& dict, const std::string& payload, int major = 1) {
    const size_t len_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    while ((8 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
    for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + payload;
  }

  template <typename T>
  static std::string bytesOf(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
  }

  void expectError(const std::string& name, const std::string& needle) const {
    try {
      readNpy(path(name));
      FAIL() << "no error for " << name;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }

  fs::path dir_;
};

TEST_F(NpyFiles, FloatRoundTripKeepsShapeAndBits) {
  Tensor t({2, 3, 5});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = std::ldexp(static_cast<float>(i) - 7.25f, -3);
  t.data[4] = -std::numeric_limits<float>::infinity();  // scores.npy holds -inf fills
  writeNpy(path("t.npy"), t);
  const NpyArray back = readNpy(path("t.npy"));
  EXPECT_EQ(back.dtype, NpyDtype::Float32);
  EXPECT_EQ(back.shape, t.shape);
  for (size_t i = 0; i < t.data.size(); ++i) EXPECT_EQ(back.values[i], static_cast<double>(t.data[i]));
}

TEST_F(NpyFiles, Int64RoundTrip) {
  const std::vector<int64_t> values = {0, -1, 50256, int64_t{1} << 40, 7, 8};
  writeNpyInt64(path("ids.npy"), {2, 1, 3}, values);
  const NpyArray back = readNpy(path("ids.npy"));
  EXPECT_EQ(back.dtype, NpyDtype::Int64);
  EXPECT_EQ(back.shape, (Shape{2, 1, 3}));
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back.values[i], static_cast<double>(values[i]));
  EXPECT_THROW(writeNpyInt64(path("bad.npy"), {4}, values), std::logic_error);
}

TEST_F(NpyFiles, BoolRoundTripAndScalarAndEmptyShapes) {
  BoolTensor m({3, 4});
  for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = (i * 7) % 3 == 0;
  writeNpy(path("m.npy"), m);
  const BoolTensor back = readNpyBool(path("m.npy"));
  EXPECT_EQ(back.shape, m.shape);
  EXPECT_EQ(back.data, m.data);

  writeNpy(path("scalar.npy"), Tensor(Shape{}, 2.5f));
  EXPECT_EQ(readNpyFloat(path("scalar.npy")).data, std::vector<float>{2.5f});
  writeNpy(path("empty.npy"), Tensor(Shape{0, 3}));
  EXPECT_EQ(readNpyFloat(path("empty.npy")).shape, (Shape{0, 3}));
}

TEST_F(NpyFiles, WrittenHeaderIsVersion1PaddedTo64Bytes) {
  writeNpy(path("v.npy"), Tensor({7}, 1.0f));
  std::ifstream in(path("v.npy"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_NE(bytes.find("'shape': (7,)"), std::string::npos);
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos);
  EXPECT_EQ(bytes.size(), 10 + header_len + 7 * 4);
}

TEST_F(NpyFiles, ReadsEveryVersionAndDtype) {
  writeBytes("f8_v2.npy", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                  bytesOf<double>({1.5, -2.25}), 2));
  writeBytes("i4_v3.npy", npyFile("{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3,)}",
                                  bytesOf<int32_t>({3, -1, 7}), 3));
  writeBytes("i8.npy", npyFile("{'shape': (2,), 'fortran_order': False, 'descr': '<i8'}",
                               bytesOf<int64_t>({5, 1LL << 40})));
  writeBytes("b1.npy", npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (1, 3), }", std::string("\1\0\1", 3)));
  // Fortran order with a single non-trivial axis is the same memory layout: accepted.
  writeBytes("f4_col.npy", npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }",
                                   bytesOf<float>({1, 2, 3})));

  EXPECT_EQ(readNpyFloat(path("f8_v2.npy")).data, (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(readNpyInt(path("i4_v3.npy")), (std::vector<int64_t>{3, -1, 7}));
  EXPECT_EQ(readNpyInt(path("i8.npy")), (std::vector<int64_t>{5, 1LL << 40}));
  const BoolTensor b = readNpyBool(path("b1.npy"));
  EXPECT_EQ(b.shape, (Shape{1, 3}));
  EXPECT_EQ(b.data, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(readNpyFloat(path("f4_col.npy")).data, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(readNpy(path("i4_v3.npy")).dtype, NpyDtype::Int32);
}

// float16 (model weights may be stored as half): each bit pattern against its exact value.
TEST_F(NpyFiles, Float16DecodesEveryKindOfHalf) {
  struct Case {
    uint16_t bits;
    double value;
  };
  const std::vector<Case> cases = {
      {0x0000, 0.0},                  {0x8000, -0.0},
      {0x3c00, 1.0},                  {0xbc00, -1.0},
      {0x3555, 0.333251953125},       {0x7bff, 65504.0},            // largest finite
      {0x0400, std::ldexp(1.0, -14)}, {0x0001, std::ldexp(1.0, -24)},  // smallest normal, subnormal
      {0x03ff, std::ldexp(1023.0, -24)}, {0xc940, -10.5},
  };
  std::string payload;
  for (const Case& c : cases) payload.append(reinterpret_cast<const char*>(&c.bits), 2);
  writeBytes("f2.npy", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 5), }", payload));
  const Tensor t = readNpyFloat(path("f2.npy"));
  EXPECT_EQ(t.shape, (Shape{2, 5}));
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(t.data[i], static_cast<float>(cases[i].value)) << "bits 0x" << std::hex << cases[i].bits;
    EXPECT_EQ(std::signbit(t.data[i]), std::signbit(cases[i].value)) << i;
  }
  const uint16_t inf = 0x7c00, nan = 0x7e00;
  writeBytes("f2_inf.npy", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }",
                                   std::string(reinterpret_cast<const char*>(&inf), 2)));
  writeBytes("f2_nan.npy", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }",
                                   std::string(reinterpret_cast<const char*>(&nan), 2)));
  EXPECT_THROW(readNpyFloat(path("f2_inf.npy")), InputError);
  EXPECT_THROW(readNpyFloat(path("f2_nan.npy")), InputError);
}

TEST_F(NpyFiles, BadFilesGiveOneLineErrorsNamingTheFile) {
  const std::string four_floats = bytesOf<float>({1, 2, 3, 4});
  writeBytes("magic.npy", "PK\3\4 not numpy at all");
  writeBytes("version.npy", std::string("\x93NUMPY\x05\x00", 8) + "\x10\x00" + std::string(16, ' '));
  writeBytes("dict.npy", npyFile("{'descr': '<f4', 'fortran_order': Nope, 'shape': (4,), }", four_floats));
  writeBytes("nokey.npy", npyFile("{'descr': '<f4', 'shape': (4,), }", four_floats));
  writeBytes("struct.npy", npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", four_floats));
  writeBytes("fortran.npy", npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats));
  writeBytes("bigend.npy", npyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats));
  writeBytes("c8.npy", npyFile("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four_floats));
  writeBytes("short.npy", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four_floats));
  writeBytes("huge.npy", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
                                 four_floats));
  writeBytes("overflow.npy",
             npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", four_floats));
  writeBytes("digits.npy", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                                   four_floats));
  writeBytes("negative.npy", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four_floats));
  std::string cut = npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four_floats);
  writeBytes("cut_header.npy", cut.substr(0, 30));

  expectError("magic.npy", "bad magic");
  expectError("version.npy", "unsupported .npy format version 5.0");
  expectError("dict.npy", "malformed .npy header");
  expectError("nokey.npy", "no 'fortran_order' key");
  expectError("struct.npy", "structured dtypes are not supported");
  expectError("fortran.npy", "Fortran order is not supported");
  expectError("bigend.npy", "big-endian");
  expectError("c8.npy", "unsupported dtype '<c8'");
  expectError("short.npy", "holds only 16 data bytes");
  expectError("huge.npy", "header declares shape [99999999999, 99999999999]");
  expectError("overflow.npy", "header declares shape");
  expectError("digits.npy", "shape entry too large");
  expectError("negative.npy", "non-negative integers");
  expectError("cut_header.npy", "truncated file");
  expectError("missing.npy", "cannot open");
}

TEST_F(NpyFiles, RoleSpecificReadersCheckDtypeAndValues) {
  writeBytes("nan.npy", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                                bytesOf<float>({1, 2, std::nanf(""), 4})));
  writeBytes("inf.npy", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                bytesOf<double>({1, -INFINITY})));
  writeBytes("big.npy", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", bytesOf<double>({1e39})));
  writeBytes("ints.npy", npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1), }", bytesOf<int64_t>({1, 2})));
  const auto readFloat = [](const std::string& file) { return readNpyFloat(file); };
  auto message = [&](auto read, const std::string& name) {
    try {
      read(path(name));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(readFloat, "nan.npy").find("NaN at index [1, 0]"), std::string::npos);
  EXPECT_NE(message(readFloat, "inf.npy").find("Inf at index [1]"), std::string::npos);
  EXPECT_NE(message(readFloat, "big.npy").find("overflows float32"), std::string::npos);
  EXPECT_NE(message(readFloat, "ints.npy").find("expected float16, float32 or float64"), std::string::npos);
  EXPECT_NE(message(readNpyBool, "ints.npy").find("expected bool"), std::string::npos);
  EXPECT_NE(message(readNpyInt, "ints.npy").find("expected a 1-D array"), std::string::npos);
  EXPECT_NE(message(readNpyInt, "nan.npy").find("expected int32 or int64"), std::string::npos);
}

TEST_F(NpyFiles, AtomicWritesLeaveNoTemporaryFiles) {
  writeFileAtomic(path("a.txt"), "first");
  writeFileAtomic(path("a.txt"), "second");
  std::ifstream in(path("a.txt"));
  std::string text;
  in >> text;
  EXPECT_EQ(text, "second");
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  EXPECT_THROW(writeNpy(path("no/such/dir/x.npy"), Tensor({1})), InputError);
}

// writeNpyStream (model run's attentions.npy past the full path's budget): chunks of any
// size make the same file as writeNpy; chunks that do not fill the shape, or overfill it,
// leave no file and no temporary file.
TEST_F(NpyFiles, StreamedWritesEqualWholeOnesAndLeaveNothingWhenShort) {
  Tensor t({3, 7});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i) * 0.5f - 3.0f;
  writeNpy(path("whole.npy"), t);
  size_t at = 0;
  writeNpyStream(path("streamed.npy"), t.shape, [&](std::vector<float>& chunk) {
    const size_t n = std::min<size_t>(5, t.data.size() - at);  // 5, 5, 5, 5, 1
    chunk.assign(t.data.begin() + static_cast<std::ptrdiff_t>(at), t.data.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return n > 0;
  });
  std::ifstream a(path("whole.npy"), std::ios::binary), b(path("streamed.npy"), std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
  for (const size_t chunks : {1u, 9u}) {  // 7 values of 21, then 63
    size_t given = 0;
    EXPECT_THROW(writeNpyStream(path("bad.npy"), t.shape, [&](std::vector<float>& chunk) {
      chunk.assign(7, 1.0f);
      return given++ < chunks;
    }), std::logic_error);
  }
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) entries += entry.path().filename() != "bad.npy" ? 1 : 100;
  EXPECT_EQ(entries, 2u) << "whole.npy and streamed.npy only";
}

TEST_F(NpyFiles, BundleSelfAttentionSeededWeightsAndLabels) {
  // query [L=3, Dq=5] (2-D: B = 1), nothing else but bundle.json and tokens.
  Tensor query({3, 5});
  for (size_t i = 0; i < query.data.size(); ++i) query.data[i] = 0.1f * static_cast<float>(i);
  fs::create_directories(dir_ / "b");
  writeNpy(path("b/query.npy"), query);
  writeBytes("b/bundle.json", R"({"d_model": 12, "heads": 3, "notes": "tiny"})");
  writeBytes("b/tokens.txt", "a\nb\nc\n");
  const Bundle bundle = loadBundle(path("b"), 64, 9);
  EXPECT_FALSE(bundle.has_weights);
  EXPECT_EQ(bundle.meta["heads"], 3);
  const AttentionInputs& in = bundle.inputs;
  EXPECT_EQ(in.query.shape, (Shape{1, 3, 5}));
  EXPECT_EQ(in.key.data, in.query.data);
  EXPECT_EQ(in.value.shape, (Shape{1, 3, 5}));
  EXPECT_EQ(in.w_q.shape, (Shape{12, 5}));  // D from bundle.json, not the default 64
  EXPECT_EQ(in.w_o.shape, (Shape{12, 12}));
  EXPECT_TRUE(in.b_q.empty());
  EXPECT_EQ(in.query_tokens, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(in.key_tokens, in.query_tokens);
  // Same seed, same weights; another seed, other weights.
  EXPECT_EQ(loadBundle(path("b"), 64, 9).inputs.w_q.data, in.w_q.data);
  EXPECT_NE(loadBundle(path("b"), 64, 10).inputs.w_q.data, in.w_q.data);

  fs::remove(dir_ / "b/bundle.json");
  EXPECT_EQ(loadBundle(path("b"), 16, 9).inputs.w_q.shape, (Shape{16, 5}));
  EXPECT_TRUE(readBundleMeta(path("b")).empty());
}

TEST_F(NpyFiles, BundleErrorsNameTheFile) {
  fs::create_directories(dir_ / "b");
  writeNpy(path("b/query.npy"), Tensor({2, 4, 8}));
  writeNpy(path("b/key.npy"), Tensor({2, 6, 5}));
  auto message = [&]() {
    try {
      loadBundle(path("b"), 8, 0);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message().find("value.npy: missing"), std::string::npos) << message();
  writeNpy(path("b/value.npy"), Tensor({2, 5, 3}));
  EXPECT_NE(message().find("value.npy: expected [B, S, Dv] with S=6 like key.npy"), std::string::npos) << message();
  writeNpy(path("b/value.npy"), Tensor({2, 6, 3}));
  writeNpy(path("b/w_q.npy"), Tensor({8, 8}));
  EXPECT_NE(message().find("w_k.npy: missing"), std::string::npos) << message();
  writeNpy(path("b/w_k.npy"), Tensor({8, 5}));
  writeNpy(path("b/w_v.npy"), Tensor({8, 3}));
  writeNpy(path("b/w_o.npy"), Tensor({8, 8}));
  EXPECT_EQ(message(), "no error");
  writeNpy(path("b/attn_mask.npy"), BoolTensor({4, 5}));
  EXPECT_NE(message().find("attn_mask.npy: expected [L, S] = [4, 6] or [B, L, S] = [2, 4, 6], got [4, 5]"),
            std::string::npos)
      << message();
  writeNpy(path("b/attn_mask.npy"), BoolTensor({2, 4, 6}));
  writeBytes("b/key_tokens.txt", "x\ny\n");
  EXPECT_NE(message().find("key_tokens.txt: 2 labels but key.npy has S = 6"), std::string::npos) << message();
  fs::remove(dir_ / "b/key_tokens.txt");
  writeBytes("b/bundle.json", "{\"d_model\": 9}");
  EXPECT_NE(message().find("bundle.json: \"d_model\" 9 does not match w_q.npy [8, 8]"), std::string::npos) << message();
  writeBytes("b/bundle.json", "{oops");
  EXPECT_NE(message().find("bundle.json: not valid JSON"), std::string::npos) << message();
}

TEST_F(NpyFiles, Float16ReadsExactlyAndTheShapeCheckRunsBeforeTheData) {
  // IEEE half bits: 1.0, -2.5, 65504 (largest), 2^-24 (smallest subnormal), -0.0, NaN.
  writeBytes("half.npy", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }",
                                 bytesOf<uint16_t>({0x3C00, 0xC100, 0x7BFF, 0x0001, 0x8000})));
  const Tensor half = readNpyFloat(path("half.npy"));
  EXPECT_EQ(half.shape, (Shape{5}));
  EXPECT_EQ(half.data, (std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24), -0.0f}));
  writeBytes("half_nan.npy", npyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2), }",
                                     bytesOf<uint16_t>({0x3C00, 0x7E00})));
  try {
    readNpyFloat(path("half_nan.npy"));
    FAIL() << "NaN accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at index [0, 1]"), std::string::npos) << e.what();
  }
  // The check sees the shape and may refuse before any data is read (here: truncated data).
  writeBytes("short.npy", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", bytesOf<float>({1, 2, 3})));
  Shape seen;
  EXPECT_THROW(readNpyFloat(path("short.npy"),
                            [&](const Shape& shape) {
                              seen = shape;
                              throw InputError("refused");
                            }),
               InputError);
  EXPECT_EQ(seen, (Shape{3}));
}

}  // namespace
}  // namespace attnscope
