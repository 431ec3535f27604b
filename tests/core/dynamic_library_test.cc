#include "core/dynamic_library.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tabforge {
namespace {

#if defined(__linux__)
TEST(DynamicLibrary, OpensTheFirstNameThatLoadsAndFindsItsSymbols) {
  DynamicLibrary library = DynamicLibrary::Open({"libtabforge-no-such-library.so.9", "libz.so.1"});
  ASSERT_TRUE(library.loaded()) << library.error();
  EXPECT_EQ(library.name(), "libz.so.1");
  const char* (*version)() = nullptr;
  ASSERT_TRUE(library.Find(&version, "zlibVersion"));
  EXPECT_GT(std::strlen(version()), 0u);
  EXPECT_EQ(library.Symbol("tabforge_no_such_symbol"), nullptr);
}
#endif

TEST(DynamicLibrary, ReportsEveryFailedName) {
  DynamicLibrary library = DynamicLibrary::Open({"libtabforge-missing-a.so", "tabforge-missing-b"});
  EXPECT_FALSE(library.loaded());
  EXPECT_NE(library.error().find("libtabforge-missing-a.so"), std::string::npos);
  EXPECT_NE(library.error().find("tabforge-missing-b"), std::string::npos);
  EXPECT_EQ(library.Symbol("anything"), nullptr);
  DynamicLibrary moved = std::move(library);
  EXPECT_FALSE(moved.loaded());
}

}  // namespace
}  // namespace tabforge
