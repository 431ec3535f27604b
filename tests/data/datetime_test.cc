#include "data/datetime.h"

#include <gtest/gtest.h>

namespace tabforge::data {
namespace {

TEST(Datetime, IsoDatesAcrossLeapDay) {
  // 2024-02-29 is day 19782 since 1970-01-01 (date -u -d 2024-02-29 +%s = 1709164800).
  auto leap = ParseDatetime("2024-02-29", DateLayout::kIso);
  ASSERT_TRUE(leap);
  EXPECT_EQ(leap->seconds, 1709164800);
  EXPECT_FALSE(leap->has_time);
  EXPECT_FALSE(ParseDatetime("2023-02-29", DateLayout::kIso));  // not a leap year
  EXPECT_FALSE(ParseDatetime("1900-02-29", DateLayout::kIso));  // century, not leap
  EXPECT_TRUE(ParseDatetime("2000-02-29", DateLayout::kIso));   // 400-year rule
  auto next = ParseDatetime("2024-03-01", DateLayout::kIso);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->seconds - leap->seconds, 86400);
}

TEST(Datetime, TimesAndOffsets) {
  // date -u -d '2011-01-01 13:45:30' +%s = 1293889530
  auto plain = ParseDatetime("2011-01-01 13:45:30", DateLayout::kIso);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->seconds, 1293889530);
  EXPECT_TRUE(plain->has_time);
  auto iso = ParseDatetime("2011-01-01T13:45:30.250Z", DateLayout::kIso);
  ASSERT_TRUE(iso);
  EXPECT_EQ(iso->seconds, 1293889530);
  auto offset = ParseDatetime("2011-01-01T15:45:30+02:00", DateLayout::kIso);
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset->seconds, 1293889530);
  EXPECT_FALSE(ParseDatetime("2011-01-01 25:00", DateLayout::kIso));
  EXPECT_FALSE(ParseDatetime("2011-01-01 12:00 garbage", DateLayout::kIso));
}

TEST(Datetime, OtherLayoutsAndMatching) {
  auto us = ParseDatetime("02/29/2024", DateLayout::kMonthDay);
  auto eu = ParseDatetime("29.02.2024", DateLayout::kDayMonth);
  ASSERT_TRUE(us && eu);
  EXPECT_EQ(us->seconds, 1709164800);
  EXPECT_EQ(eu->seconds, 1709164800);
  unsigned both = DateLayoutsMatching("03/04/2024");
  EXPECT_TRUE(both & (1u << unsigned(DateLayout::kMonthDay)));
  EXPECT_TRUE(both & (1u << unsigned(DateLayout::kDayMonth)));
  EXPECT_EQ(DateLayoutsMatching("13/04/2024"), 1u << unsigned(DateLayout::kDayMonth));
  EXPECT_EQ(DateLayoutsMatching("12345"), 0u);
  EXPECT_EQ(DateLayoutsMatching("3.5"), 0u);
}

TEST(Datetime, CivilRoundTripAndWeekday) {
  CivilTime civil = ToCivil(1709164800 + 3661);
  EXPECT_EQ(civil.year, 2024);
  EXPECT_EQ(civil.month, 2);
  EXPECT_EQ(civil.day, 29);
  EXPECT_EQ(civil.hour, 1);
  EXPECT_EQ(civil.minute, 1);
  EXPECT_EQ(civil.second, 1);
  EXPECT_EQ(civil.weekday, 3);            // 2024-02-29 was a Thursday
  EXPECT_EQ(ToCivil(0).weekday, 3);       // 1970-01-01: Thursday
  EXPECT_EQ(ToCivil(-86400).day, 31);     // 1969-12-31
  EXPECT_EQ(ToCivil(-86400).weekday, 2);  // Wednesday
  EXPECT_EQ(FormatDatetime(1709164800), "2024-02-29");
  EXPECT_EQ(FormatDatetime(1293889530), "2011-01-01 13:45:30");
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
}

}  // namespace
}  // namespace tabforge::data
