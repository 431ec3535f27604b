#include "core/strings.h"

#include <gtest/gtest.h>

#include "core/context.h"
#include "core/error.h"
#include "core/timer.h"

namespace tabforge {
namespace {

TEST(Strings, TrimSpacesRemovesSpacesAndTabsOnly) {
  EXPECT_EQ(TrimSpaces("  ?\t"), "?");
  EXPECT_EQ(TrimSpaces(""), "");
  EXPECT_EQ(TrimSpaces("   "), "");
  EXPECT_EQ(TrimSpaces(" a b "), "a b");
  EXPECT_EQ(TrimSpaces("\na\n"), "\na\n");
}

TEST(Strings, FindInvalidUtf8) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii text, long enough for the fast path"),
            std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("caf\xE9!"), 3u);          // Latin-1 e-acute
  EXPECT_EQ(FindInvalidUtf8("ab\xC0\xAF"), 2u);        // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xED\xA0\x80"), 0u);      // UTF-16 surrogate
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("12345678\xE2\x82"), 8u);  // truncated sequence at the end
}

TEST(Strings, CountWordsAndJoin) {
  EXPECT_EQ(CountWords("Braund, Mr. Owen Harris"), 4);
  EXPECT_EQ(CountWords("  "), 0);
  EXPECT_EQ(CountWords("one"), 1);
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Printable("a\tb\xFF"), "a\\x09b\\xFF");
}

TEST(Errors, CheckThrowsInternalErrorWithLocation) {
  try {
    TFG_CHECK(1 + 1 == 3, "arithmetic is {}", "broken");
    FAIL() << "TFG_CHECK did not throw";
  } catch (const InternalError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("strings_test.cc"), std::string::npos) << message;
    EXPECT_NE(message.find("arithmetic is broken"), std::string::npos) << message;
  }
}

TEST(Context, ThreadsDefaultsToHardware) {
  Context context;
  EXPECT_GE(context.Threads(), 1);
  context.num_threads = 3;
  EXPECT_EQ(context.Threads(), 3);
}

TEST(Deadline, ExpiresAndNeverExpires) {
  EXPECT_FALSE(Deadline().Expired());
  EXPECT_TRUE(Deadline::In(-1).Expired());
  EXPECT_FALSE(Deadline::In(3600).Expired());
  EXPECT_GT(Deadline::In(3600).SecondsLeft(), 3500);
}

}  // namespace
}  // namespace tabforge
