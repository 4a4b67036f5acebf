// Tokenizer folders (core/tokenizer): tokenizer.json, tokenizer_config.json,
// special_tokens_map.json, vocab.json and merges.txt built from one fuzzer input (see
// writeSections), loaded, then used on the input's "text" section and a few fixed texts.
// Bounded: inputs over 64 KiB and texts over 512 bytes are cut, so one input stays far from
// 10 s and 2 GiB (the tokenizer itself refuses steps that grow a text more than 64 times).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {
attnscope::fuzz::Scratch scratch;
constexpr size_t kMaxInput = size_t{64} << 10;
constexpr size_t kMaxText = 512;

const char* const kFiles[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                              "merges.txt", "text"};

void exercise(const attnscope::HfTokenizer& tokenizer, const std::string& text, const std::string& dir) {
  for (const bool special : {true, false}) {
    try {
      for (const attnscope::Token& token : tokenizer.encode(text, special)) {
        if (token.id < 0) std::abort();
        tokenizer.label(token.id);
      }
    } catch (const attnscope::InputError& e) {
      attnscope::fuzz::requireNamed(e.what(), dir);
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::filesystem::path& dir = scratch.fresh();
  std::string text;
  attnscope::fuzz::writeSections(std::string(reinterpret_cast<const char*>(data), size), dir, [](const std::string& name) {
    for (const char* file : kFiles) {
      if (name == file) return true;
    }
    return false;
  });
  if (std::filesystem::exists(dir / "text")) {
    std::ifstream in(dir / "text", std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
    text.resize(std::min(text.size(), kMaxText));
  }
  try {
    const attnscope::HfTokenizer tokenizer = attnscope::HfTokenizer::load(dir.string());
    for (int64_t id = 0; id < std::min<int64_t>(tokenizer.vocabSize(), 64); ++id) tokenizer.label(id);
    tokenizer.piece(-1);
    tokenizer.label(tokenizer.vocabSize());
    for (const std::string& sample : {text, std::string("Hello world! 你好 \xf0\x9f\x98\x80\n\t 123"),
                                      std::string("\xff\xfe<s>[CLS] x")}) {
      exercise(tokenizer, sample, dir.string());
    }
  } catch (const attnscope::InputError& e) {
    attnscope::fuzz::requireNamed(e.what(), dir.string());
  }
  return 0;
}
