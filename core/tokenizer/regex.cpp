#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <cctype>

#include "tensor/tensor.h"
#include "tokenizer/unicode.h"

namespace attnscope::tok {

// Bounds a pathological pattern (fuzzed, or a typo) to an error instead of minutes of backtracking.
constexpr uint32_t kMatchLimit = 2'000'000;
constexpr uint32_t kDepthLimit = 10'000;

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Compiled() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern, const std::string& where) : where_(where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw InputError(where + " is not a valid regex: " + reinterpret_cast<const char*>(message) + " at offset " +
                     std::to_string(offset));
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // faster when available; the interpreter otherwise
  compiled->context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(compiled->context, kMatchLimit);
  pcre2_set_depth_limit(compiled->context, kDepthLimit);
  compiled_ = std::move(compiled);
}

Regex Regex::literal(const std::string& text, const std::string& where) {
  std::string escaped;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = std::isalnum(byte) || byte >= 0x80;
    if (byte < 0x20) {
      escaped += "\\x{" + std::to_string(byte / 16) + "0123456789abcdef"[byte % 16] + "}";
    } else {
      if (!plain) escaped += '\\';
      escaped += c;
    }
  }
  return Regex(escaped, where);
}

std::vector<Span> Regex::findAll(const std::string& text) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  std::vector<Span> spans;
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(compiled_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start,
                               PCRE2_NO_UTF_CHECK, data.get(), compiled_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw InputError(where_ + ": " + reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const Span match{ovector[0], ovector[1]};
    if (match.second < match.first) break;  // \K tricks; never in a tokenizer's pattern
    spans.push_back(match);
    if (match.second > match.first) {
      start = match.second;
    } else if (match.second < text.size()) {
      start = match.second + utf8Length(static_cast<unsigned char>(text[match.second]));
    } else {
      break;
    }
  }
  return spans;
}

}  // namespace attnscope::tok
