// Small hand-made inputs for the figure tests: matrices with known values and traces
// built field by field (no attention maths involved), so every expected colour is known.
#pragma once

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "figure/figure.h"
#include "tensor/npy.h"

namespace attnscope::test {

// The view model of a copy of the trace (one layer), as the exporter and figures read it.
inline ViewModel viewOf(const AttentionTrace& trace) {
  return viewFromTrace(std::make_shared<const AttentionTrace>(trace));
}

// rows x cols matrix with values v[r][c] = (r * cols + c) / (rows * cols - 1): every cell a
// different value in [0, 1], so neighbouring cells have different colours.
inline Figure rampFigure(int64_t rows, int64_t cols, int64_t cell_px) {
  Figure figure;
  figure.rows = rows;
  figure.cols = cols;
  FigurePanel panel;
  for (int64_t i = 0; i < rows * cols; ++i) panel.values.push_back(static_cast<float>(i) / (rows * cols - 1));
  figure.panels.push_back(panel);
  for (int64_t r = 0; r < rows; ++r) figure.row_labels.push_back("q" + std::to_string(r));
  for (int64_t c = 0; c < cols; ++c) figure.col_labels.push_back("k" + std::to_string(c));
  figure.title = "ramp";
  figure.subtitle = "test";
  figure.value_label = "value";
  figure.low = 0.0f;
  figure.high = 1.0f;
  figure.cell_px = cell_px;
  return figure;
}

// B x H x L x S trace with causal mask: probs[b,h,i,j] = 1/(i+1) for j <= i, else 0;
// scores[b,h,i,j] = (h + 1) * (j - i / 2) for j <= i, else -inf. Tokens "t0".. / "k0"..
inline AttentionTrace causalTrace(int64_t B, int64_t H, int64_t L, int64_t S) {
  AttentionTrace t;
  t.B = B, t.H = H, t.L = L, t.S = S;
  t.probs = Tensor({B, H, L, S});
  t.scores = Tensor({B, H, L, S});
  t.mask.allowed = BoolTensor({B, L, S});
  t.mask.components.push_back({"causal", BoolTensor({B, L, S})});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < L; ++i) {
      for (int64_t j = 0; j < S; ++j) t.mask.allowed.data[(b * L + i) * S + j] = j <= i;
    }
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          const size_t k = static_cast<size_t>(((b * H + h) * L + i) * S + j);
          t.probs.data[k] = j <= i ? 1.0f / static_cast<float>(std::min(i, S - 1) + 1) : 0.0f;
          t.scores.data[k] = j <= i ? static_cast<float>((h + 1) * (j - i / 2.0)) : -INFINITY;
        }
      }
    }
  }
  for (int64_t i = 0; i < L; ++i) t.query_tokens.push_back("t" + std::to_string(i));
  for (int64_t j = 0; j < S; ++j) t.key_tokens.push_back("k" + std::to_string(j));
  return t;
}

// A fresh empty folder under the test temp dir.
inline std::string freshDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("attnscope_figure_tests_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline size_t countOccurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace attnscope::test
