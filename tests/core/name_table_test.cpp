// Every enum <-> name registry goes through one NameTable (registry/name_table.h): each
// value's name finds the value again, every other name is unknown with one wording that
// lists the names, and the lists that settings, bundle.json and flags print come from it.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "attention/mask.h"
#include "attention/mistakes.h"
#include "attention/variants.h"
#include "config/settings.h"
#include "registry/name_table.h"
#include "view/colormap.h"
#include "view/map_kinds.h"

namespace attnscope {
namespace {

// One registry: its names in row order and what unknown("nope") says.
struct Registry {
  const char* noun;
  std::vector<std::string> names;
  std::function<bool()> round_trips;  // name(v) finds v, for every value
  std::function<std::string()> list;
  std::function<std::string()> unknown;
};

template <typename E>
Registry registry(const char* noun, const NameTable<E>& table, std::vector<std::string> names) {
  return {noun, std::move(names),
          [&table] {
            for (E value : table.values())
              if (table.find(table.name(value)) != value) return false;
            return true;
          },
          [&table] { return table.list(); }, [&table] { return table.unknown("nope"); }};
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

TEST(NameTable, EveryRegistryRoundTripsAndNamesTheUnknown) {
  const Registry registries[] = {
      registry("source", inputSourceNames(), {"text", "synthetic", "bundle", "model"}),
      registry("scale", scaleChoiceNames(), {"inv_sqrt_d", "none", "temperature", "factor"}),
      registry("fill", maskFillNames(), {"inf", "1e9"}),
      registry("mistake", mistakeNames(),
               {"none", "floor-div-scale", "kv-reshape-with-L", "no-head-split", "shared-linear", "no-scale",
                "no-contiguous", "mask-not-broadcast"}),
      registry("rope style", ropeStyleNames(), {"half", "interleaved"}),
      registry("map kind", mapKindNames(), {"probs", "scores", "mask", "rollout", "flow"}),
      registry("colormap", colormapNames(), {"viridis", "cividis", "magma", "diverging"}),
  };
  for (const Registry& r : registries) {
    SCOPED_TRACE(r.noun);
    EXPECT_TRUE(r.round_trips());
    EXPECT_EQ(r.list(), joined(r.names));
    EXPECT_EQ(r.unknown(), "unknown " + std::string(r.noun) + " 'nope' (one of: " + joined(r.names) + ")");
  }
}

TEST(NameTable, OtherSpellingsAreFoundButNotListed) {
  EXPECT_EQ(maskFillNames().find("-inf"), MaskFill::NegInf);
  EXPECT_EQ(maskFillNames().find("-1e9"), MaskFill::NegBillion);
  EXPECT_STREQ(maskFillNames().name(MaskFill::NegBillion), "1e9");
  EXPECT_EQ(maskFillNames().values(), (std::vector<MaskFill>{MaskFill::NegInf, MaskFill::NegBillion}));
  EXPECT_EQ(maskFillNames().list(" or ", true), "\"inf\" or \"1e9\"");
  EXPECT_EQ(colormapNames().list(" or "), "viridis, cividis, magma or diverging");
}

TEST(NameTable, ParseThrowsTheUnknownLine) {
  EXPECT_EQ(colormapNames().parse("magma"), Colormap::Magma);
  try {
    colormapNames().parse("rainbow");
    FAIL() << "rainbow parsed";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown colormap 'rainbow' (one of: viridis, cividis, magma, diverging)");
  }
  EXPECT_FALSE(inputSourceNames().find("Text"));  // names are exact
  EXPECT_FALSE(inputSourceNames().find(""));
}

}  // namespace
}  // namespace attnscope
