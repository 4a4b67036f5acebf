#include "config/text_input.h"

#include <cmath>

#include "tensor/utf8.h"

namespace attnscope {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1): 53 random bits, never exactly 0 (Box-Muller takes its log).
double uniformOpen(uint64_t& state) {
  return ((splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

bool isSpace(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' ||
         cp == 0x3000;  // ideographic space
}

// Scripts written without spaces between words: every character is its own token.
bool isCjk(uint32_t cp) {
  return (cp >= 0x3001 && cp <= 0x303F)      // CJK symbols and punctuation
         || (cp >= 0x3040 && cp <= 0x30FF)   // hiragana, katakana
         || (cp >= 0x3400 && cp <= 0x4DBF)   // CJK extension A
         || (cp >= 0x4E00 && cp <= 0x9FFF)   // CJK unified ideographs
         || (cp >= 0xF900 && cp <= 0xFAFF)   // CJK compatibility ideographs
         || (cp >= 0xFF00 && cp <= 0xFFEF)   // halfwidth and fullwidth forms
         || (cp >= 0x20000 && cp <= 0x3134F);  // extensions B..G
}

void fillUniform(Tensor& w, double bound, uint64_t state) {
  for (float& x : w.data) x = static_cast<float>((2.0 * uniformOpen(state) - 1.0) * bound);
}

}  // namespace

std::vector<std::string> tokenize(const std::string& utf8_text) {
  std::vector<std::string> tokens;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) tokens.push_back(current);
    current.clear();
  };
  for (size_t pos = 0; pos < utf8_text.size();) {
    uint32_t cp = 0;
    const size_t len = decodeUtf8At(utf8_text, pos, cp);
    if (isSpace(cp)) {
      flush();
    } else if (isCjk(cp)) {
      flush();
      tokens.push_back(utf8_text.substr(pos, len));
    } else {
      current += utf8_text.substr(pos, len);
    }
    pos += len;
  }
  flush();
  return tokens;
}

std::vector<float> tokenEmbedding(const std::string& token, int64_t d_model, uint64_t seed) {
  std::vector<float> row(std::max<int64_t>(d_model, 0));
  uint64_t state = fnv1a(token) ^ (seed * 0xD1B54A32D192ED03ull);
  for (size_t c = 0; c < row.size(); c += 2) {
    // Box-Muller: two N(0, 1) values per pair of uniforms.
    const double radius = std::sqrt(-2.0 * std::log(uniformOpen(state)));
    const double angle = 2.0 * M_PI * uniformOpen(state);
    row[c] = static_cast<float>(radius * std::cos(angle));
    if (c + 1 < row.size()) row[c + 1] = static_cast<float>(radius * std::sin(angle));
  }
  return row;
}

void seedDefaultWeights(AttentionInputs& inputs, int64_t D, int64_t Dq, int64_t Dk, int64_t Dv,
                        bool bias, uint64_t seed) {
  if (D < 1 || Dq < 1 || Dk < 1 || Dv < 1) {
    throw InputError("weights need positive sizes, got D=" + std::to_string(D) + " Dq=" + std::to_string(Dq) +
                     " Dk=" + std::to_string(Dk) + " Dv=" + std::to_string(Dv));
  }
  // One independent stream per matrix so changing one size leaves the others alone.
  const uint64_t base = seed * 0x9E3779B97F4A7C15ull;
  inputs.w_q = Tensor({D, Dq});
  inputs.w_k = Tensor({D, Dk});
  inputs.w_v = Tensor({D, Dv});
  inputs.w_o = Tensor({D, D});
  fillUniform(inputs.w_q, std::sqrt(6.0 / static_cast<double>(Dq + D)), base ^ 0x5151ull);
  fillUniform(inputs.w_k, std::sqrt(6.0 / static_cast<double>(Dk + D)), base ^ 0x6B6Bull);
  fillUniform(inputs.w_v, std::sqrt(6.0 / static_cast<double>(Dv + D)), base ^ 0x7676ull);
  fillUniform(inputs.w_o, 1.0 / std::sqrt(static_cast<double>(D)), base ^ 0x6F6Full);
  if (bias) {
    inputs.b_q = inputs.b_k = inputs.b_v = inputs.b_o = Tensor({D}, 0.0f);
  } else {
    inputs.b_q = inputs.b_k = inputs.b_v = inputs.b_o = Tensor();
  }
}

void poolKeyValueHeads(AttentionInputs& inputs, int64_t heads, int64_t kv_heads) {
  if (kv_heads < 1 || heads < 1 || heads % kv_heads != 0) {
    throw InputError("kv_heads G=" + std::to_string(kv_heads) + " does not divide H=" + std::to_string(heads) +
                     " (each K/V head serves H/G query heads)");
  }
  if (inputs.w_k.shape.size() != 2 || inputs.w_k.dim(0) % heads != 0) {
    throw InputError("kv_heads: w_k " + shapeToString(inputs.w_k.shape) + " is not [H*d, Dk] with H=" +
                     std::to_string(heads));
  }
  const int64_t d = inputs.w_k.dim(0) / heads, group = heads / kv_heads;
  // rows [H*d, cols] -> [G*d, cols]: row g*d + c is the mean of rows (g*group + m)*d + c.
  auto pool = [&](Tensor& t) {
    if (t.empty()) return;
    const int64_t cols = t.shape.size() == 2 ? t.dim(1) : 1;
    Tensor pooled(t.shape.size() == 2 ? Shape{kv_heads * d, cols} : Shape{kv_heads * d});
    for (int64_t g = 0; g < kv_heads; ++g)
      for (int64_t c = 0; c < d; ++c)
        for (int64_t x = 0; x < cols; ++x) {
          double sum = 0.0;
          for (int64_t m = 0; m < group; ++m) sum += t.data[((g * group + m) * d + c) * cols + x];
          pooled.data[(g * d + c) * cols + x] = static_cast<float>(sum / static_cast<double>(group));
        }
    t = std::move(pooled);
  };
  for (Tensor* t : {&inputs.w_k, &inputs.w_v, &inputs.b_k, &inputs.b_v}) pool(*t);
}

}  // namespace attnscope
