#include "attention/mask.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <limits>

namespace attnscope {
namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t first = s.find_first_not_of(ws);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(ws) - first + 1);
}

// Whole-string non-negative integer; InputError names the term on failure.
int64_t parseCount(const std::string& text, const std::string& term) {
  const std::string t = trim(text);
  if (t.empty()) throw InputError("mask: term '" + term + "' needs a number");
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(t.c_str(), &end, 10);
  // end must reach the real end: an embedded NUL would stop strtoll early.
  if (end != t.c_str() + t.size() || errno == ERANGE) {
    throw InputError("mask: term '" + term + "' has a bad number '" + t + "'");
  }
  if (value < 0) throw InputError("mask: term '" + term + "' must not be negative");
  return value;
}

std::string joinSegments(const std::vector<int64_t>& segments, const char* sep) {
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(segments[i]);
  }
  return out;
}

// segment id of every position 0..n-1; positions past the listed lengths share one id.
// Segment ends saturate at INT64_MAX: lengths such as 9223372036854775807 must not overflow.
std::vector<int64_t> segmentIds(const std::vector<int64_t>& segments, int64_t n) {
  std::vector<int64_t> ids(n);
  int64_t seg = 0, end = segments.empty() ? n : segments[0];
  for (int64_t p = 0; p < n; ++p) {
    while (seg < static_cast<int64_t>(segments.size()) && p >= end) {
      ++seg;
      if (seg < static_cast<int64_t>(segments.size())) {
        const int64_t room = std::numeric_limits<int64_t>::max() - end;
        end = segments[seg] > room ? std::numeric_limits<int64_t>::max() : end + segments[seg];
      }
    }
    ids[p] = seg;
  }
  return ids;
}

}  // namespace

namespace {

struct FillRow {
  MaskFill fill;
  const char* name;
};
// The first row of a fill is its name; the others are accepted spellings.
constexpr FillRow kFills[] = {
    {MaskFill::NegInf, "inf"}, {MaskFill::NegBillion, "1e9"}, {MaskFill::NegInf, "-inf"}, {MaskFill::NegBillion, "-1e9"}};

}  // namespace

const char* maskFillName(MaskFill fill) {
  for (const FillRow& row : kFills)
    if (row.fill == fill) return row.name;
  return "inf";
}

std::optional<MaskFill> maskFillFromName(const std::string& name) {
  for (const FillRow& row : kFills)
    if (name == row.name) return row.fill;
  return std::nullopt;
}

MaskSpec MaskSpec::parse(const std::string& text) {
  MaskSpec spec;
  const std::string all = trim(text);
  if (all.empty() || all == "none") return spec;
  size_t start = 0;
  while (start <= all.size()) {
    size_t plus = all.find('+', start);
    if (plus == std::string::npos) plus = all.size();
    const std::string term = trim(all.substr(start, plus - start));
    start = plus + 1;
    if (term.empty()) throw InputError("mask: empty term in '" + all + "'");
    const size_t colon = term.find(':');
    const std::string name = trim(term.substr(0, colon));
    const std::string arg = colon == std::string::npos ? "" : term.substr(colon + 1);
    const bool has_arg = colon != std::string::npos;
    auto noArg = [&] {
      if (has_arg) throw InputError("mask: term '" + name + "' takes no argument");
    };
    if (name == "causal") {
      noArg();
      spec.causal = true;
    } else if (name == "causal-br") {
      noArg();
      spec.causal_bottom_right = true;
    } else if (name == "padding") {
      noArg();
      spec.padding = true;
    } else if (name == "window") {
      spec.window = parseCount(arg, term);
    } else if (name == "causal-window") {
      spec.causal_window = parseCount(arg, term);
    } else if (name == "prefix") {
      spec.prefix = parseCount(arg, term);
    } else if (name == "sinks") {
      spec.sinks = parseCount(arg, term);
    } else if (name == "segments") {
      spec.segments.clear();
      size_t s = 0;
      while (s <= arg.size()) {
        size_t comma = arg.find(',', s);
        if (comma == std::string::npos) comma = arg.size();
        const int64_t n = parseCount(arg.substr(s, comma - s), term);
        if (n <= 0) throw InputError("mask: term '" + term + "' needs positive segment lengths");
        spec.segments.push_back(n);
        s = comma + 1;
      }
    } else {
      throw InputError("mask: unknown term '" + term +
                       "' (use none, causal, causal-br, window:W, causal-window:W, sinks:K, prefix:P, "
                       "segments:n1,n2,..., padding)");
    }
  }
  spec.checkSinks();
  return spec;
}

std::string MaskSpec::toString() const {
  std::vector<std::string> terms;
  if (causal) terms.push_back("causal");
  if (causal_bottom_right) terms.push_back("causal-br");
  if (window >= 0) terms.push_back("window:" + std::to_string(window));
  if (causal_window >= 0) terms.push_back("causal-window:" + std::to_string(causal_window));
  if (sinks >= 0) terms.push_back("sinks:" + std::to_string(sinks));
  if (prefix >= 0) terms.push_back("prefix:" + std::to_string(prefix));
  if (!segments.empty()) terms.push_back("segments:" + joinSegments(segments, ","));
  if (padding) terms.push_back("padding");
  if (terms.empty()) return "none";
  std::string out = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) out += "+" + terms[i];
  return out;
}

std::string MaskSpec::shortName() const {
  std::vector<std::string> terms;
  if (causal) terms.push_back("causal");
  if (causal_bottom_right) terms.push_back("causalbr");
  if (window >= 0) terms.push_back("window" + std::to_string(window));
  if (causal_window >= 0) terms.push_back("causalwindow" + std::to_string(causal_window));
  if (sinks >= 0) terms.push_back("sinks" + std::to_string(sinks));
  if (prefix >= 0) terms.push_back("prefix" + std::to_string(prefix));
  if (!segments.empty()) terms.push_back("segments" + joinSegments(segments, "-"));
  if (padding) terms.push_back("padding");
  if (terms.empty()) return "nomask";
  std::string out = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) out += "+" + terms[i];
  return out;
}

bool MaskSpec::any() const {
  return causal || causal_bottom_right || window >= 0 || causal_window >= 0 || prefix >= 0 ||
         !segments.empty() || padding;
}

void MaskSpec::checkSinks() const {
  if (sinks < -1) throw InputError("mask: sinks K must be >= 0, got " + std::to_string(sinks));
  if (sinks >= 0 && window < 0 && causal_window < 0) {
    throw InputError("mask: sinks:" + std::to_string(sinks) +
                     " needs a window term (window:W or causal-window:W) for the sinks to stay visible beside");
  }
}

bool MaskSpec::operator==(const MaskSpec& other) const {
  return causal == other.causal && causal_bottom_right == other.causal_bottom_right &&
         window == other.window && causal_window == other.causal_window &&
         prefix == other.prefix && segments == other.segments && padding == other.padding &&
         sinks == other.sinks;
}

std::vector<MaskTerm> maskTerms(const MaskSpec& spec, int64_t B, int64_t L, int64_t S,
                                const std::vector<int64_t>& valid_lens, const BoolTensor& key_padding,
                                const BoolTensor& attn_mask) {
  // Fields may be set directly (GUI), so check them here as well as in parse().
  if (spec.window < -1) throw InputError("mask: window W must be >= 0, got " + std::to_string(spec.window));
  if (spec.causal_window < -1) {
    throw InputError("mask: causal-window W must be >= 0, got " + std::to_string(spec.causal_window));
  }
  if (spec.prefix < -1) throw InputError("mask: prefix P must be >= 0, got " + std::to_string(spec.prefix));
  spec.checkSinks();
  for (int64_t n : spec.segments) {
    if (n <= 0) throw InputError("mask: segment lengths must be positive, got " + std::to_string(n));
  }
  if (!valid_lens.empty()) {
    if (static_cast<int64_t>(valid_lens.size()) != B) {
      throw InputError("valid_lens has " + std::to_string(valid_lens.size()) +
                       " entries but the batch size is B=" + std::to_string(B));
    }
    for (size_t b = 0; b < valid_lens.size(); ++b) {
      if (valid_lens[b] < 0 || valid_lens[b] > S) {
        throw InputError("valid_lens[" + std::to_string(b) + "]=" + std::to_string(valid_lens[b]) +
                         " is outside [0, S=" + std::to_string(S) + "]");
      }
    }
  }
  if (!key_padding.empty() && key_padding.shape != Shape{B, S}) {
    throw InputError("key_padding has shape " + shapeToString(key_padding.shape) + ", expected " +
                     shapeToString({B, S}) + " [B, S]");
  }
  const bool mask_2d = attn_mask.shape == Shape{L, S};
  if (!attn_mask.empty() && !mask_2d && attn_mask.shape != Shape{B, L, S}) {
    throw InputError("attn_mask has shape " + shapeToString(attn_mask.shape) + ", expected " +
                     shapeToString({L, S}) + " or " + shapeToString({B, L, S}));
  }

  // Each term writes row[j] = allowed(j) for j in [0, S): a tight loop the compiler vectorises.
  std::vector<MaskTerm> terms;
  auto add = [&](const std::string& name, auto allowed) {
    terms.push_back({name, [allowed, S](int64_t b, int64_t i, uint8_t* row) {
                       for (int64_t j = 0; j < S; ++j) row[j] = allowed(b, i, j) ? 1 : 0;
                     }});
  };
  if (spec.causal) add("causal", [](int64_t, int64_t i, int64_t j) { return j <= i; });
  if (spec.causal_bottom_right) {
    add("causal-br", [L, S](int64_t, int64_t i, int64_t j) { return j <= i + S - L; });
  }
  // Sinks (StreamingLLM) widen each window term: the first k keys stay visible however far
  // back they are, so they are part of the window's component (" | sinks:k"), not an AND.
  const int64_t k = spec.sinks;
  const std::string sinks_name = k >= 0 ? " | sinks:" + std::to_string(k) : "";
  if (spec.window >= 0) {
    const int64_t w = spec.window;
    add("window:" + std::to_string(w) + sinks_name,
        [w, k](int64_t, int64_t i, int64_t j) { return (j - i <= w && i - j <= w) || j < k; });
  }
  if (spec.causal_window >= 0) {
    const int64_t w = spec.causal_window;
    add("causal-window:" + std::to_string(w) + sinks_name,
        [w, k](int64_t, int64_t i, int64_t j) { return j <= i && (i - j <= w || j < k); });
  }
  if (spec.prefix >= 0) {
    const int64_t p = spec.prefix;
    add("prefix:" + std::to_string(p), [p](int64_t, int64_t i, int64_t j) { return j < p || j <= i; });
  }
  if (!spec.segments.empty()) {
    auto qid = std::make_shared<const std::vector<int64_t>>(segmentIds(spec.segments, L));
    auto kid = std::make_shared<const std::vector<int64_t>>(segmentIds(spec.segments, S));
    add("segments:" + joinSegments(spec.segments, ","),
        [qid, kid](int64_t, int64_t i, int64_t j) { return (*qid)[i] == (*kid)[j]; });
  }
  // "padding" uses valid_lens, else key_padding; an explicit key_padding is applied anyway.
  // Tensors from files are shared, not copied, by the terms.
  auto padding = std::make_shared<const BoolTensor>(key_padding);
  auto keyPadding = [padding, S](int64_t b, int64_t, int64_t j) { return padding->data[b * S + j] != 0; };
  bool key_padding_used = false;
  if (spec.padding) {
    if (!valid_lens.empty()) {
      add("padding", [lens = valid_lens](int64_t b, int64_t, int64_t j) { return j < lens[b]; });
    } else if (!key_padding.empty()) {
      add("padding", keyPadding);
      key_padding_used = true;
    } else {
      throw InputError("mask: 'padding' needs valid_lens or key_padding (none given)");
    }
  }
  if (!attn_mask.empty()) {
    auto mask = std::make_shared<const BoolTensor>(attn_mask);
    add("attn_mask", [mask, mask_2d, L, S](int64_t b, int64_t i, int64_t j) {
      return mask->data[(mask_2d ? 0 : b * L * S) + i * S + j] != 0;
    });
  }
  if (!key_padding.empty() && !key_padding_used) add("key_padding", keyPadding);
  return terms;
}

void maskRow(const std::vector<MaskTerm>& terms, int64_t b, int64_t i, int64_t S, uint8_t* row,
             std::vector<uint8_t>& scratch) {
  std::fill(row, row + S, uint8_t{1});
  scratch.resize(S);
  for (const MaskTerm& term : terms) {
    term.row(b, i, scratch.data());
    for (int64_t j = 0; j < S; ++j) row[j] &= scratch[j];
  }
}

MaskSet buildMasks(const MaskSpec& spec, int64_t B, int64_t L, int64_t S,
                   const std::vector<int64_t>& valid_lens, const BoolTensor& key_padding,
                   const BoolTensor& attn_mask) {
  MaskSet set;
  set.allowed = BoolTensor({B, L, S}, true);
  for (const MaskTerm& term : maskTerms(spec, B, L, S, valid_lens, key_padding, attn_mask)) {
    MaskComponent c{term.name, BoolTensor({B, L, S})};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) term.row(b, i, &c.allowed.data[(b * L + i) * S]);
    for (size_t n = 0; n < set.allowed.data.size(); ++n) set.allowed.data[n] &= c.allowed.data[n];
    set.components.push_back(std::move(c));
  }
  return set;
}

}  // namespace attnscope
