// renderViewHtml: the page's embedded maps decoded here (base64, zlib inflate, byte planes,
// 16-bit codes over each map's range) equal the view's values within half a quantization
// step; masked cells carry the masked code; a small budget pools the maps by the block rule
// (each cell its block's maximum) and names the pooling; the zoomed window is stored exactly;
// tokens cannot end the page's script.
#include <zlib.h>

#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "figure_test_util.h"

namespace attnscope {
namespace {

using nlohmann::json;

json pageData(const std::string& page) {
  const std::string open = "<script type=\"application/json\" class=\"av-data\">";
  const size_t begin = page.find(open) + open.size();
  return json::parse(page.substr(begin, page.find("</script>", begin) - begin));
}

std::string unbase64(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = bits << 6 | static_cast<uint32_t>(alphabet.find(c));
    if ((count += 6) >= 8) out += static_cast<char>((bits >> (count -= 8)) & 0xff);
  }
  return out;
}

// count maps of cells codes each -> values (NaN = the masked code 65535).
std::vector<std::vector<double>> decodeMaps(const std::string& encoded, size_t cells, size_t count,
                                            const json& ranges) {
  const std::string packed = unbase64(encoded);
  std::string raw(2 * cells * count, '\0');
  uLongf size = raw.size();
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &size, reinterpret_cast<const Bytef*>(packed.data()),
                       packed.size()), Z_OK);
  EXPECT_EQ(size, raw.size());
  std::vector<std::vector<double>> maps(count, std::vector<double>(cells));
  for (size_t m = 0; m < count; ++m) {
    const double lo = ranges[m][0], hi = ranges[m][1];
    for (size_t i = 0; i < cells; ++i) {
      const unsigned code = uint8_t(raw[2 * cells * m + i]) | uint8_t(raw[2 * cells * m + cells + i]) << 8;
      maps[m][i] = code == 65535 ? NAN : lo + code * (hi - lo) / 65534.0;
    }
  }
  return maps;
}

// Imported maps [layers, 1, H, L, S] of random rows (each a distribution), tokens "t0"...
ViewModel randomView(int64_t layers, int64_t H, int64_t L, int64_t S, unsigned seed) {
  ImportedMaps maps;
  maps.maps = Tensor({layers, 1, H, L, S});
  std::mt19937 rng(seed);
  std::exponential_distribution<float> draw(1.0f);
  for (int64_t row = 0; row < layers * H * L; ++row) {
    float sum = 0.0f;
    for (int64_t j = 0; j < S; ++j) sum += maps.maps.data[row * S + j] = draw(rng);
    for (int64_t j = 0; j < S; ++j) maps.maps.data[row * S + j] /= sum;
  }
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < L; ++i) tokens.push_back("t" + std::to_string(i));
  tokens[0] = "</script><b>";
  maps.query_tokens = {tokens};
  return viewFromImported(std::move(maps));
}

TEST(HtmlExport, MapsDecodeToTheViewWithinHalfAStep) {
  const ViewModel view = test::viewOf(test::causalTrace(1, 3, 6, 6));  // probabilities and scores, causal
  const json data = pageData(renderViewHtml(view, HtmlRequest{}));
  ASSERT_EQ(data["kinds"].size(), 2u);
  // Both kinds are one payload, kind after kind.
  json ranges = data["kinds"][0]["quant"];
  for (const json& range : data["kinds"][1]["quant"]) ranges.push_back(range);
  const auto maps = decodeMaps(data["maps"], 36, 6, ranges);
  for (int64_t m = 0; m < 6; ++m) {
    const bool scores = m >= 3;
    const int64_t h = m % 3;
    const float* source = scores ? view.scores(0, 0, h) : view.probs(0, 0, h);
    const double step = (double(ranges[m][1]) - double(ranges[m][0])) / 65534.0;
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const double got = maps[m][i * 6 + j];
        if (j > i) {
          EXPECT_TRUE(std::isnan(got)) << m << " " << i << " " << j;  // masked
        } else {
          EXPECT_NEAR(got, source[i * 6 + j], step / 2 + 1e-7) << m << " " << i << " " << j;
        }
      }
  }
  EXPECT_EQ(data["pooling"], "");
}

TEST(HtmlExport, SmallBudgetPoolsByBlockMaximumAndSaysSo) {
  const ViewModel view = randomView(1, 2, 64, 48, 3);
  HtmlRequest request;
  request.map_budget_bytes = 4000;  // far below 2 x 64 x 48 x 2 bytes of noise
  const std::string page = renderViewHtml(view, request);
  const json data = pageData(page);
  const int64_t rows = data["rows"], cols = data["cols"];
  EXPECT_LT(rows, 64);
  EXPECT_GE(rows, kHtmlMinPooledSide);
  EXPECT_EQ(rows, cols);  // one side limit for both axes
  EXPECT_NE(data["pooling"].get<std::string>().find("maps pooled from 64 \u00d7 48 to"), std::string::npos);
  const auto maps = decodeMaps(data["maps"], rows * cols, 2, data["kinds"][0]["quant"]);
  for (int64_t h = 0; h < 2; ++h) {
    const double step = (double(data["kinds"][0]["quant"][h][1]) - double(data["kinds"][0]["quant"][h][0])) / 65534.0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float block_max = -INFINITY;  // the block rule of core/view/downsample.h
        for (int64_t i = r * 64 / rows; i < (r + 1) * 64 / rows; ++i)
          for (int64_t j = c * 48 / cols; j < (c + 1) * 48 / cols; ++j) block_max = std::max(block_max, view.probs(0, 0, h)[i * 48 + j]);
        EXPECT_NEAR(maps[h][r * cols + c], block_max, step / 2 + 1e-7);
      }
  }
  // The labels of a pooled axis name the positions a cell covers and the first one's token;
  // no token ends the script.
  EXPECT_EQ(data["row_labels"][0], "0-" + std::to_string(64 / rows - 1) + " '" + view.query_tokens[0][0] + "'");
  EXPECT_EQ(data["row_positions"][1], 64 / rows);
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
}

TEST(HtmlExport, ZoomedWindowIsStoredExactlyBesidePooledMaps) {
  const ViewModel view = randomView(2, 2, 300, 280, 5);  // pooled to 256 x 256 cells
  HtmlRequest request;
  request.focus_layer = 1;
  request.focus_head = 1;
  request.window = CellWindow{100, 40, 30, 50};
  const json data = pageData(renderViewHtml(view, request));
  EXPECT_EQ(data["rows"], 256);
  const json& window = data["window"];
  EXPECT_EQ(window["layer"], 1);
  EXPECT_EQ(window["head"], 1);
  EXPECT_EQ(window["rows"], 40);
  EXPECT_EQ(window["cols"], 50);
  EXPECT_EQ(window["row_labels"][0], "100 't100'");
  const auto maps = decodeMaps(window["maps"], 40 * 50, 1, json::array({window["kinds"][0]["quant"]}));
  const double step = (double(window["kinds"][0]["quant"][1]) - double(window["kinds"][0]["quant"][0])) / 65534.0;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 50; ++j)
      EXPECT_NEAR(maps[0][i * 50 + j], view.probs(1, 0, 1)[(100 + i) * 280 + 30 + j], step / 2 + 1e-7);
  // The window's colour scale is the whole layer's, as on screen.
  const auto scale = probsColorScale(view, {1}, 0, false);
  EXPECT_FLOAT_EQ(window["kinds"][0]["scale"][1].get<float>(), scale.second);
}

}  // namespace
}  // namespace attnscope
