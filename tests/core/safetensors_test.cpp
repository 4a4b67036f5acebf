// The safetensors header parser and conversion (tensor/safetensors.h): a table of files
// built in memory, each with its one-line error or its float32 values (worked out by hand
// from the IEEE half and bfloat16 layouts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/safetensors.h"

namespace attnscope {
namespace {

// 8-byte little-endian length, the header, then the data.
std::vector<uint8_t> file(const std::string& header, const std::vector<uint8_t>& data, uint64_t length_field = ~0ull) {
  const uint64_t n = length_field == ~0ull ? header.size() : length_field;
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

struct ErrorCase {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* message;  // the whole line after "f.safetensors: "
};

TEST(Safetensors, BadFilesGiveOneLineNamingFileAndTensor) {
  const std::vector<uint8_t> eight(8, 0);
  const ErrorCase cases[] = {
      {"truncated", {1, 2, 3}, "truncated: 3 bytes, but a safetensors file starts with an 8-byte header length"},
      {"length beyond file", file("{}", {}, 1000),
       "header length 1000 goes beyond the file (10 bytes): truncated or not safetensors"},
      {"not json", file("{x", {}), "the header is not valid JSON (not a safetensors file?)"},
      {"not an object", file("[1]", {}), "the header must be a JSON object {name: {dtype, shape, data_offsets}}"},
      {"unknown dtype", file(R"({"w":{"dtype":"F12","shape":[2],"data_offsets":[0,4]}})", eight),
       "tensor \"w\": unknown dtype \"F12\" (attnscope reads F32, F16, BF16)"},
      // 8 + 55 header bytes + 8 of data = 71; the header needs 8 + 55 + 16 = 79.
      {"out of range", file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight),
       "truncated: 71 bytes where its header needs 79 (tensor \"w\": data_offsets [0, 16] end past the 8 bytes of "
       "data): an unfinished download or copy?"},
      {"reversed", file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", eight),
       "tensor \"w\": data_offsets [4, 0] out of range (begin after end)"},
      {"span vs shape", file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", eight),
       "tensor \"w\": data_offsets span 8 bytes but F32 [1] needs 4"},
      {"overlap", file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}})", eight),
       "tensors \"a\" and \"b\" have overlapping data_offsets"},
      {"bad shape", file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", eight),
       "tensor \"w\": \"shape\" must hold non-negative integers"},
      {"missing key", file(R"({"w":{"dtype":"F32","shape":[1]}})", eight),
       "tensor \"w\" must be an object with \"dtype\", \"shape\" and \"data_offsets\""},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      parseSafetensorsHeader(c.bytes.data(), c.bytes.size(), "f.safetensors");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("f.safetensors: ") + c.message);
    }
  }
}

TEST(Safetensors, ConvertsF32F16Bf16AndSkipsMetadata) {
  // F16 0x3c00 = 1, 0xc000 = -2, 0x3555 ~ 0.33325195; BF16 0x3f80 = 1, 0x4049 = 3.140625.
  const std::vector<uint8_t> data = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35, 0x00, 0x00,
                                     0x80, 0x3f, 0x49, 0x40};
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("h":{"dtype":"F16","shape":[3],"data_offsets":[4,10]},"pad":{"dtype":"U8","shape":[2],"data_offsets":[10,12]},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[12,16]}}   )";
  const std::vector<uint8_t> bytes = file(header, data);
  const SafetensorsHeader h = parseSafetensorsHeader(bytes.data(), bytes.size(), "f.safetensors");
  ASSERT_EQ(h.tensors.size(), 4u);
  const std::pair<const char*, std::vector<float>> want[] = {
      {"a", {1.0f}}, {"h", {1.0f, -2.0f, 0.33325195f}}, {"b", {1.0f, 3.140625f}}};
  for (const auto& [name, values] : want) {
    std::vector<float> out(values.size());
    convertSafetensor(bytes.data(), h, name, "f.safetensors", out.data());
    EXPECT_EQ(out, values) << name;
  }
  std::vector<float> out(2);
  try {
    convertSafetensor(bytes.data(), h, "pad", "f.safetensors", out.data());
    ADD_FAILURE() << "U8 converted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "f.safetensors: tensor \"pad\" has dtype U8; attnscope reads F32, F16, BF16");
  }
}

TEST(Safetensors, NonFiniteValuesAreRefusedNamingTheIndex) {
  const std::vector<uint8_t> data = {0x00, 0x3c, 0x00, 0x7c};  // F16 1, +inf
  const std::vector<uint8_t> bytes = file(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", data);
  const SafetensorsHeader h = parseSafetensorsHeader(bytes.data(), bytes.size(), "f.safetensors");
  std::vector<float> out(2);
  EXPECT_THROW(
      {
        try {
          convertSafetensor(bytes.data(), h, "w", "f.safetensors", out.data());
        } catch (const InputError& e) {
          EXPECT_EQ(std::string(e.what()), "f.safetensors: tensor \"w\" holds a NaN or infinite value at index 1");
          throw;
        }
      },
      InputError);
}

// Tensors of several 1 Mi pieces (converted across the threads): the values arrive, and the
// first non-finite value is named whichever piece finds one first.
TEST(Safetensors, LargeTensorsConvertAndNameTheFirstBadIndex) {
  constexpr uint64_t n = (uint64_t{5} << 20) / 2 + 3;  // 2.5 Mi + 3 values: three pieces
  std::vector<float> values(n);
  for (uint64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000) - 500.0f;
  const std::string header = R"({"w":{"dtype":"F32","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                             std::to_string(4 * n) + "]}}";
  const auto bytes_of = [&] {
    std::vector<uint8_t> data(4 * n);
    std::memcpy(data.data(), values.data(), data.size());
    return file(header, data);
  };
  std::vector<float> out(n);
  std::vector<uint8_t> bytes = bytes_of();
  convertSafetensor(bytes.data(), parseSafetensorsHeader(bytes.data(), bytes.size(), "f.safetensors"), "w",
                    "f.safetensors", out.data());
  EXPECT_EQ(out, values);
  values[n - 1] = INFINITY, values[1800000] = NAN;
  bytes = bytes_of();
  try {
    convertSafetensor(bytes.data(), parseSafetensorsHeader(bytes.data(), bytes.size(), "f.safetensors"), "w",
                      "f.safetensors", out.data());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "f.safetensors: tensor \"w\" holds a NaN or infinite value at index 1800000");
  }
}

}  // namespace
}  // namespace attnscope
