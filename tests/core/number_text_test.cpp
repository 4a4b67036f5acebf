// Three significant digits (core/view/number_text.h): the lens tooltip's and the plots' numbers,
// against values written out by hand.
#include <gtest/gtest.h>

#include "view/number_text.h"

namespace attnscope {
namespace {

TEST(NumberText, ThreeSignificantDigits) {
  const std::pair<double, const char*> cases[] = {
      {0.123, "12.3%"},    {0.0123, "1.23%"},  {1.23e-4, "0.0123%"}, {1.0, "100%"},   {0.5, "50.0%"},
      {1.234e-7, "0.0000123%"}, {0.0, "0%"},   {0.99996, "100%"}, {0.00456789, "0.457%"},
  };
  for (const auto& [p, text] : cases) EXPECT_EQ(percentText(p), text) << p;
  EXPECT_EQ(significantText(0.0223), "0.0223");
  EXPECT_EQ(significantText(0.0178), "0.0178");
  EXPECT_EQ(significantText(-1.5), "-1.50");
  EXPECT_EQ(significantText(42.0, 2), "42");
  EXPECT_EQ(significantText(0.0099999998), "0.0100");  // the digits after rounding
  EXPECT_EQ(significantText(999.7), "1000");
}

}  // namespace
}  // namespace attnscope
