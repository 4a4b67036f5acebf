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

const NameTable<MaskFill>& maskFillNames() {
  static const NameTable<MaskFill> table("fill", kFills, &FillRow::fill, &FillRow::name);
  return table;
}

const char* maskFillName(MaskFill fill) { return maskFillNames().name(fill); }

namespace {

// What a term's predicate reads besides the spec.
struct TermInputs {
  int64_t L, S;
  const std::vector<int64_t>& valid_lens;
  const BoolTensor& key_padding;
  bool key_padding_used = false;  // the padding term took it: no key_padding component
};

// Each term writes row[j] = allowed(b, i, j) for j in [0, S): a tight loop the compiler vectorises.
template <typename Allowed>
MaskTerm rowTerm(std::string name, int64_t S, Allowed allowed) {
  return {std::move(name), [allowed, S](int64_t b, int64_t i, uint8_t* row) {
            for (int64_t j = 0; j < S; ++j) row[j] = allowed(b, i, j) ? 1 : 0;
          }};
}

// Tensors from files are shared, not copied, by the terms.
MaskTerm keyPaddingTerm(std::string name, const BoolTensor& key_padding, int64_t S) {
  auto padding = std::make_shared<const BoolTensor>(key_padding);
  return rowTerm(std::move(name), S, [padding, S](int64_t b, int64_t, int64_t j) { return padding->data[b * S + j] != 0; });
}

// Sinks (StreamingLLM) widen each window term: the first k keys stay visible however far
// back they are, so they are part of the window's component (" | sinks:k"), not an AND.
std::string withSinks(const std::string& text, const MaskSpec& spec) {
  return spec.sinks >= 0 ? text + " | sinks:" + std::to_string(spec.sinks) : text;
}

MaskTerm causalTerm(const MaskSpec&, TermInputs& in, const std::string& text) {
  return rowTerm(text, in.S, [](int64_t, int64_t i, int64_t j) { return j <= i; });
}
MaskTerm causalBottomRightTerm(const MaskSpec&, TermInputs& in, const std::string& text) {
  return rowTerm(text, in.S, [L = in.L, S = in.S](int64_t, int64_t i, int64_t j) { return j <= i + S - L; });
}
MaskTerm windowTerm(const MaskSpec& spec, TermInputs& in, const std::string& text) {
  return rowTerm(withSinks(text, spec), in.S, [w = spec.window, k = spec.sinks](int64_t, int64_t i, int64_t j) {
    return (j - i <= w && i - j <= w) || j < k;
  });
}
MaskTerm causalWindowTerm(const MaskSpec& spec, TermInputs& in, const std::string& text) {
  return rowTerm(withSinks(text, spec), in.S, [w = spec.causal_window, k = spec.sinks](int64_t, int64_t i, int64_t j) {
    return j <= i && (i - j <= w || j < k);
  });
}
MaskTerm prefixTerm(const MaskSpec& spec, TermInputs& in, const std::string& text) {
  return rowTerm(text, in.S, [p = spec.prefix](int64_t, int64_t i, int64_t j) { return j < p || j <= i; });
}
MaskTerm segmentsTerm(const MaskSpec& spec, TermInputs& in, const std::string& text) {
  auto qid = std::make_shared<const std::vector<int64_t>>(segmentIds(spec.segments, in.L));
  auto kid = std::make_shared<const std::vector<int64_t>>(segmentIds(spec.segments, in.S));
  return rowTerm(text, in.S, [qid, kid](int64_t, int64_t i, int64_t j) { return (*qid)[i] == (*kid)[j]; });
}
// "padding" uses valid_lens, else key_padding (an explicit key_padding is applied anyway).
MaskTerm paddingTerm(const MaskSpec&, TermInputs& in, const std::string& text) {
  if (!in.valid_lens.empty())
    return rowTerm(text, in.S, [lens = in.valid_lens](int64_t b, int64_t, int64_t j) { return j < lens[b]; });
  if (in.key_padding.empty()) throw InputError("mask: 'padding' needs valid_lens or key_padding (none given)");
  in.key_padding_used = true;
  return keyPaddingTerm(text, in.key_padding, in.S);
}

// A term's component for these inputs; null: it has none of its own (sinks widen windows).
using BuildTerm = MaskTerm (*)(const MaskSpec& spec, TermInputs& in, const std::string& text);
struct TermRow {
  MaskTermKind kind;
  BuildTerm build;
};

// The one mask term table, in canonical (toString) order; components follow it too.
const TermRow kTermRows[] = {
    // name, arg, short name, panel label, flag / count / lengths, values, masks; predicate
    {{"causal", "", "causal", "causal", &MaskSpec::causal, nullptr, nullptr, nullptr, true}, causalTerm},
    {{"causal-br", "", "causalbr", "causal bottom-right", &MaskSpec::causal_bottom_right, nullptr, nullptr, nullptr,
      true},
     causalBottomRightTerm},
    {{"window", "W", "window", "window W", nullptr, &MaskSpec::window, nullptr, nullptr, true}, windowTerm},
    {{"causal-window", "W", "causalwindow", "causal window W", nullptr, &MaskSpec::causal_window, nullptr, nullptr,
      true},
     causalWindowTerm},
    {{"sinks", "K", "sinks", "sinks K", nullptr, &MaskSpec::sinks, nullptr, nullptr, false}, nullptr},
    {{"prefix", "P", "prefix", "prefix-LM P", nullptr, &MaskSpec::prefix, nullptr, nullptr, true}, prefixTerm},
    {{"segments", "n1,n2,...", "segments", "segments", nullptr, nullptr, &MaskSpec::segments, "segment lengths", true},
     segmentsTerm},
    {{"padding", "", "padding", "padding (valid lengths)", &MaskSpec::padding, nullptr, nullptr, nullptr, true},
     paddingTerm},
};

const MaskTermKind* findKind(const std::string& name) {
  for (const TermRow& row : kTermRows)
    if (name == row.kind.name) return &row.kind;
  return nullptr;
}

// "none, causal, causal-br, window:W, ...": what --mask takes.
std::string termUsage() {
  std::string usage = "none";
  for (const TermRow& row : kTermRows) usage += ", " + std::string(row.kind.name) + (*row.kind.arg ? ":" : "") + row.kind.arg;
  return usage;
}

// One term's value into spec: `term` is its whole text, `name` its trimmed name.
void parseTerm(const MaskTermKind& kind, const std::string& term, const std::string& name, bool has_arg,
               const std::string& arg, MaskSpec& spec) {
  if (kind.flag) {
    if (has_arg) throw InputError("mask: term '" + name + "' takes no argument");
    spec.*kind.flag = true;
  } else if (kind.count) {
    spec.*kind.count = parseCount(arg, term);
  } else {
    std::vector<int64_t>& lengths = spec.*kind.lengths;
    lengths.clear();
    size_t s = 0;
    while (s <= arg.size()) {
      size_t comma = arg.find(',', s);
      if (comma == std::string::npos) comma = arg.size();
      const int64_t n = parseCount(arg.substr(s, comma - s), term);
      if (n <= 0) throw InputError("mask: term '" + term + "' needs positive " + kind.values);
      lengths.push_back(n);
      s = comma + 1;
    }
  }
}

// "window:3", "segments:4,6", "causal": the term's text form.
std::string termText(const MaskTermKind& kind, const MaskSpec& spec) {
  return kind.name + (kind.flag ? "" : ":" + kind.valueText(spec, ","));
}

// The active terms' texts joined by '+', or `none` without any.
template <typename Text>
std::string joinTerms(const MaskSpec& spec, const char* none, Text text) {
  std::string out;
  for (const TermRow& row : kTermRows)
    if (row.kind.active(spec)) out += (out.empty() ? "" : "+") + text(row.kind);
  return out.empty() ? none : out;
}

}  // namespace

bool MaskTermKind::active(const MaskSpec& spec) const {
  if (flag) return spec.*flag;
  if (count) return spec.*count >= 0;
  return !(spec.*lengths).empty();
}

std::string MaskTermKind::valueText(const MaskSpec& spec, const char* separator) const {
  if (flag) return "";
  if (count) return std::to_string(spec.*count);
  return joinSegments(spec.*lengths, separator);
}

const std::vector<MaskTermKind>& maskTermKinds() {
  static const std::vector<MaskTermKind> kinds = [] {
    std::vector<MaskTermKind> all;
    for (const TermRow& row : kTermRows) all.push_back(row.kind);
    return all;
  }();
  return kinds;
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
    const MaskTermKind* kind = findKind(name);
    if (!kind) throw InputError("mask: unknown term '" + term + "' (use " + termUsage() + ")");
    parseTerm(*kind, term, name, colon != std::string::npos, colon == std::string::npos ? "" : term.substr(colon + 1),
              spec);
  }
  spec.checkSinks();
  return spec;
}

std::string MaskSpec::toString() const {
  return joinTerms(*this, "none", [this](const MaskTermKind& kind) { return termText(kind, *this); });
}

std::string MaskSpec::shortName() const {
  return joinTerms(*this, "nomask",
                   [this](const MaskTermKind& kind) { return kind.short_name + kind.valueText(*this, "-"); });
}

bool MaskSpec::any() const {
  for (const TermRow& row : kTermRows)
    if (row.kind.masks && row.kind.active(*this)) return true;
  return false;
}

void MaskSpec::checkSinks() const {
  if (sinks < -1) throw InputError("mask: sinks K must be >= 0, got " + std::to_string(sinks));
  if (sinks >= 0 && window < 0 && causal_window < 0) {
    throw InputError("mask: sinks:" + std::to_string(sinks) +
                     " needs a window term (window:W or causal-window:W) for the sinks to stay visible beside");
  }
}

bool MaskSpec::operator==(const MaskSpec& other) const {
  for (const TermRow& row : kTermRows) {
    const MaskTermKind& kind = row.kind;
    const bool same = kind.flag ? this->*kind.flag == other.*kind.flag
                      : kind.count ? this->*kind.count == other.*kind.count
                                   : this->*kind.lengths == other.*kind.lengths;
    if (!same) return false;
  }
  return true;
}

namespace {

// Fields may be set directly (GUI), so maskTerms checks them as well as parse().
void checkSpecValues(const MaskSpec& spec) {
  for (const TermRow& row : kTermRows) {
    const MaskTermKind& kind = row.kind;
    if (kind.count && spec.*kind.count < -1)
      throw InputError("mask: " + std::string(kind.name) + " " + kind.arg + " must be >= 0, got " +
                       std::to_string(spec.*kind.count));
    if (kind.lengths)
      for (int64_t n : spec.*kind.lengths)
        if (n <= 0) throw InputError("mask: " + std::string(kind.values) + " must be positive, got " + std::to_string(n));
  }
  spec.checkSinks();
}

void checkMaskInputs(int64_t B, int64_t L, int64_t S, const std::vector<int64_t>& valid_lens,
                     const BoolTensor& key_padding, const BoolTensor& attn_mask) {
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
  if (!attn_mask.empty() && attn_mask.shape != Shape{L, S} && attn_mask.shape != Shape{B, L, S}) {
    throw InputError("attn_mask has shape " + shapeToString(attn_mask.shape) + ", expected " +
                     shapeToString({L, S}) + " or " + shapeToString({B, L, S}));
  }
}

}  // namespace

std::vector<MaskTerm> maskTerms(const MaskSpec& spec, int64_t B, int64_t L, int64_t S,
                                const std::vector<int64_t>& valid_lens, const BoolTensor& key_padding,
                                const BoolTensor& attn_mask) {
  checkSpecValues(spec);
  checkMaskInputs(B, L, S, valid_lens, key_padding, attn_mask);
  std::vector<MaskTerm> terms;
  TermInputs in{L, S, valid_lens, key_padding};
  for (const TermRow& row : kTermRows) {
    if (!row.build || !row.kind.active(spec)) continue;
    terms.push_back(row.build(spec, in, termText(row.kind, spec)));
  }
  if (!attn_mask.empty()) {
    auto mask = std::make_shared<const BoolTensor>(attn_mask);
    const bool mask_2d = attn_mask.shape == Shape{L, S};
    terms.push_back(rowTerm("attn_mask", S, [mask, mask_2d, L, S](int64_t b, int64_t i, int64_t j) {
      return mask->data[(mask_2d ? 0 : b * L * S) + i * S + j] != 0;
    }));
  }
  if (!key_padding.empty() && !in.key_padding_used) terms.push_back(keyPaddingTerm("key_padding", key_padding, S));
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
