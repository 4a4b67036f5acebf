// Mask specs: text round trip, parse errors, and each term's pattern against its formula.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "attention/mask.h"
#include "reference.h"

namespace attnscope {
namespace {

struct RoundTrip {
  const char* text;       // as typed
  const char* canonical;  // toString()
  const char* short_name;
};

const RoundTrip kRoundTrips[] = {
    {"none", "none", "nomask"},
    {"", "none", "nomask"},
    {"causal", "causal", "causal"},
    {"causal-br", "causal-br", "causalbr"},
    {"window:3", "window:3", "window3"},
    {"causal-window:2", "causal-window:2", "causalwindow2"},
    {"prefix:4", "prefix:4", "prefix4"},
    {"segments:3,2,5", "segments:3,2,5", "segments3-2-5"},
    {"padding", "padding", "padding"},
    {" window:3 + causal ", "causal+window:3", "causal+window3"},
    {"padding+segments:1,1+prefix:0+causal-window:0+window:0+causal-br+causal",
     "causal+causal-br+window:0+causal-window:0+prefix:0+segments:1,1+padding",
     "causal+causalbr+window0+causalwindow0+prefix0+segments1-1+padding"},
};

TEST(MaskSpec, ParseToStringRoundTrip) {
  for (const RoundTrip& rt : kRoundTrips) {
    const MaskSpec spec = MaskSpec::parse(rt.text);
    EXPECT_EQ(spec.toString(), rt.canonical) << rt.text;
    EXPECT_EQ(spec.shortName(), rt.short_name) << rt.text;
    EXPECT_EQ(MaskSpec::parse(spec.toString()), spec) << rt.text;
    EXPECT_EQ(spec.any(), std::string(rt.canonical) != "none");
  }
}

TEST(MaskSpec, ParsedFields) {
  const MaskSpec spec = MaskSpec::parse("causal+window:3+segments:2,4+padding");
  EXPECT_TRUE(spec.causal);
  EXPECT_FALSE(spec.causal_bottom_right);
  EXPECT_EQ(spec.window, 3);
  EXPECT_EQ(spec.causal_window, -1);
  EXPECT_EQ(spec.prefix, -1);
  EXPECT_EQ(spec.segments, (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(spec.padding);
  EXPECT_FALSE(spec == MaskSpec::parse("causal+window:4+segments:2,4+padding"));
}

struct ParseError {
  const char* text;
  const char* message;  // substring of the InputError message
};

const ParseError kParseErrors[] = {
    {"casual", "mask: unknown term 'casual'"},
    {"causal+", "mask: empty term"},
    {"window", "mask: term 'window' needs a number"},
    {"window:", "mask: term 'window:' needs a number"},
    {"window:x", "has a bad number 'x'"},
    {"window:-1", "mask: term 'window:-1' must not be negative"},
    {"causal-window:2.5", "has a bad number '2.5'"},
    {"prefix:-3", "must not be negative"},
    {"segments:3,0", "needs positive segment lengths"},
    {"segments:3,,2", "needs a number"},
    {"segments:", "needs a number"},
    {"causal:3", "mask: term 'causal' takes no argument"},
    {"padding:1", "takes no argument"},
    {"none+causal", "unknown term 'none'"},
    {"window:99999999999999999999", "has a bad number"},
};

// Regression (issue 12): strtoll stopped at an embedded NUL, so "window:3\0junk" parsed as 3.
TEST(MaskSpec, EmbeddedNulIsABadNumber) {
  for (const std::string& text : {std::string("window:3\0junk", 14), std::string("segments:2,\0", 12),
                                 std::string("prefix:\0", 8)}) {
    EXPECT_THROW(MaskSpec::parse(text), InputError) << text.size();
  }
}

TEST(MaskSpec, ParseErrorsNameTheTerm) {
  for (const ParseError& e : kParseErrors) {
    try {
      MaskSpec::parse(e.text);
      ADD_FAILURE() << "no error for '" << e.text << "'";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(e.message), std::string::npos)
          << "'" << e.text << "' gave: " << err.what();
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos);
    }
  }
}

struct Pattern {
  const char* spec;
  int64_t L, S;
  std::function<bool(int64_t, int64_t)> allowed;
};

TEST(BuildMasks, EachTermMatchesItsFormula) {
  const Pattern patterns[] = {
      {"causal", 5, 5, [](int64_t i, int64_t j) { return j <= i; }},
      {"causal", 3, 6, [](int64_t i, int64_t j) { return j <= i; }},
      {"causal-br", 3, 6, [](int64_t i, int64_t j) { return j <= i + 3; }},
      {"causal-br", 6, 3, [](int64_t i, int64_t j) { return j <= i - 3; }},
      {"window:1", 6, 6, [](int64_t i, int64_t j) { return std::abs(i - j) <= 1; }},
      {"causal-window:2", 6, 6, [](int64_t i, int64_t j) { return j <= i && j >= i - 2; }},
      {"prefix:2", 6, 6, [](int64_t i, int64_t j) { return j < 2 || j <= i; }},
      {"segments:2,3", 7, 7,
       [](int64_t i, int64_t j) {
         auto seg = [](int64_t p) { return p < 2 ? 0 : p < 5 ? 1 : 2; };
         return seg(i) == seg(j);
       }},
      // Regression (issue 12): the running segment end overflowed int64 (UBSan).
      {"segments:1,2,9223372036854775807", 6, 6,
       [](int64_t i, int64_t j) {
         auto seg = [](int64_t p) { return p < 1 ? 0 : p < 3 ? 1 : 2; };
         return seg(i) == seg(j);
       }},
      {"segments:9223372036854775807,9223372036854775807", 3, 4, [](int64_t, int64_t) { return true; }},
      {"causal+window:1", 5, 5, [](int64_t i, int64_t j) { return j <= i && i - j <= 1; }},
      {"none", 3, 4, [](int64_t, int64_t) { return true; }},
  };
  for (const Pattern& p : patterns) {
    const MaskSet set = buildMasks(MaskSpec::parse(p.spec), 2, p.L, p.S, {}, {}, {});
    ASSERT_EQ(set.allowed.shape, (Shape{2, p.L, p.S}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < p.L; ++i)
        for (int64_t j = 0; j < p.S; ++j)
          ASSERT_EQ(set.allowed.data[(b * p.L + i) * p.S + j], p.allowed(i, j) ? 1 : 0)
              << p.spec << " L=" << p.L << " S=" << p.S << " at " << i << "," << j;
  }
}

TEST(BuildMasks, ComponentsInSpecOrderThenExplicit) {
  BoolTensor key_padding({2, 4}, true);
  key_padding.data[3] = 0;
  BoolTensor attn_mask({3, 4}, true);
  attn_mask.data[0] = 0;
  const MaskSet set = buildMasks(MaskSpec::parse("causal-br+window:1+padding"), 2, 3, 4, {4, 2}, key_padding, attn_mask);
  std::vector<std::string> names;
  for (const MaskComponent& c : set.components) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"causal-br", "window:1", "padding", "attn_mask", "key_padding"}));
  for (size_t n = 0; n < set.allowed.data.size(); ++n) {
    uint8_t all = 1;
    for (const MaskComponent& c : set.components) all &= c.allowed.data[n];
    EXPECT_EQ(set.allowed.data[n], all);
  }
  // padding with only key_padding given: one component, not two
  const MaskSet kp = buildMasks(MaskSpec::parse("padding"), 2, 3, 4, {}, key_padding, {});
  ASSERT_EQ(kp.components.size(), 1u);
  EXPECT_EQ(kp.components[0].name, "padding");
  EXPECT_EQ(kp.allowed.data[3], 0);
}

TEST(BuildMasks, ErrorsNameTheProblem) {
  const BoolTensor none;
  auto expectError = [](const std::function<void()>& fn, const std::string& message) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << message;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expectError([&] { buildMasks(MaskSpec::parse("padding"), 2, 3, 4, {}, none, none); },
              "mask: 'padding' needs valid_lens or key_padding");
  expectError([&] { buildMasks({}, 2, 3, 4, {1}, none, none); }, "valid_lens has 1 entries but the batch size is B=2");
  expectError([&] { buildMasks({}, 2, 3, 4, {1, 5}, none, none); }, "valid_lens[1]=5 is outside [0, S=4]");
  expectError([&] { buildMasks({}, 2, 3, 4, {-1, 2}, none, none); }, "valid_lens[0]=-1 is outside");
  expectError([&] { buildMasks({}, 2, 3, 4, {}, BoolTensor({2, 3}), none); }, "key_padding has shape [2, 3], expected [2, 4]");
  expectError([&] { buildMasks({}, 2, 3, 4, {}, none, BoolTensor({4, 3})); },
              "attn_mask has shape [4, 3], expected [3, 4] or [2, 3, 4]");
  MaskSpec bad;
  bad.window = -5;
  expectError([&] { buildMasks(bad, 1, 3, 3, {}, none, none); }, "mask: window W must be >= 0, got -5");
  bad = MaskSpec();
  bad.causal_window = -2;
  expectError([&] { buildMasks(bad, 1, 3, 3, {}, none, none); }, "causal-window W must be >= 0");
  bad = MaskSpec();
  bad.prefix = -2;
  expectError([&] { buildMasks(bad, 1, 3, 3, {}, none, none); }, "mask: prefix P must be >= 0, got -2");
  bad = MaskSpec();
  bad.segments = {2, 0};
  expectError([&] { buildMasks(bad, 1, 3, 3, {}, none, none); }, "mask: segment lengths must be positive, got 0");
}

// The one table of term kinds: each row is one MaskSpec field, its text round-trips, it is
// named in the parser's usage line, and the test reference has a rule of its own for it.
TEST(MaskTermKinds, EveryKindRoundTripsAndHasAReferenceRule) {
  std::set<std::string> names;
  for (const MaskTermKind& kind : maskTermKinds()) {
    SCOPED_TRACE(kind.name);
    EXPECT_TRUE(names.insert(kind.name).second);
    EXPECT_EQ((kind.flag != nullptr) + (kind.count != nullptr) + (kind.lengths != nullptr), 1);
    MaskSpec spec;
    EXPECT_FALSE(kind.active(spec));
    if (kind.flag) spec.*kind.flag = true;
    if (kind.count) spec.*kind.count = 2;
    if (kind.lengths) spec.*kind.lengths = {2, 3};
    if (!kind.masks) spec.window = 1;  // sinks widen a window term
    EXPECT_TRUE(kind.active(spec));
    EXPECT_TRUE(spec.any());
    EXPECT_EQ(MaskSpec::parse(spec.toString()), spec) << spec.toString();
    EXPECT_FALSE(MaskSpec() == spec);
    EXPECT_NE(spec.shortName().find(kind.short_name), std::string::npos) << spec.shortName();
    try {
      MaskSpec::parse("nope");
      FAIL();
    } catch (const InputError& e) {
      const std::string usage = std::string(kind.name) + (*kind.arg ? std::string(":") + kind.arg : "");
      EXPECT_NE(std::string(e.what()).find(usage), std::string::npos) << e.what();
    }
  }
  std::set<std::string> reference_names;
  for (const testing::ReferenceTerm& term : testing::referenceTerms()) reference_names.insert(term.name);
  EXPECT_EQ(reference_names, names);
}

}  // namespace
}  // namespace attnscope
