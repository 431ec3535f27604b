#include "models/tree/row_groups.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace tabforge::tree {
namespace {

BinMatrix RandomBins(std::int64_t rows, int features, int values, bool wide, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> pick(0, values - 1);
  BinMatrix bins;
  bins.num_rows = rows;
  bins.num_features = features;
  const std::size_t cells = static_cast<std::size_t>(rows) * features;
  for (std::size_t at = 0; at < cells; ++at) {
    const int bin = pick(random) * (wide ? 300 : 1);
    if (wide) {
      bins.bins16.push_back(static_cast<std::uint16_t>(bin));
    } else {
      bins.bins8.push_back(static_cast<std::uint8_t>(bin));
    }
  }
  return bins;
}

std::vector<int> RowOf(const BinMatrix& bins, std::int64_t row) {
  std::vector<int> out;
  for (int feature = 0; feature < bins.num_features; ++feature) {
    out.push_back(bins.Bin(feature, row));
  }
  return out;
}

// 3 features of 3 values: at most 27 distinct rows among 2,000, so every group is checked
// against a brute-force set of the distinct rows.
TEST(RowGroups, GroupsHoldExactlyTheRowsOfEqualBins) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "16-bit bins" : "8-bit bins");
    const BinMatrix bins = RandomBins(2000, 3, 3, wide, 5);
    std::set<std::vector<int>> distinct;
    for (std::int64_t row = 0; row < bins.num_rows; ++row) distinct.insert(RowOf(bins, row));
    RowGroups groups;
    ASSERT_TRUE(GroupEqualRows(bins, bins.num_rows, groups));
    ASSERT_EQ(groups.num_groups(), static_cast<std::int64_t>(distinct.size()));
    EXPECT_EQ(groups.bins.wide(), wide);
    std::set<std::vector<int>> seen;
    std::int64_t previous_first = -1;
    for (std::int64_t group = 0; group < groups.num_groups(); ++group) {
      const std::vector<int> key = RowOf(groups.bins, group);
      EXPECT_TRUE(seen.insert(key).second) << "group " << group << " repeats another's bins";
      ASSERT_LT(groups.begin[group], groups.begin[group + 1]);
      // Groups are numbered by their first rows; members ascend within a group.
      EXPECT_GT(groups.members[groups.begin[group]], previous_first);
      previous_first = groups.members[groups.begin[group]];
      for (std::int64_t at = groups.begin[group]; at < groups.begin[group + 1]; ++at) {
        const std::int32_t row = groups.members[at];
        EXPECT_EQ(RowOf(bins, row), key);
        EXPECT_EQ(groups.group_of[row], group);
        if (at > groups.begin[group]) {
          EXPECT_LT(groups.members[at - 1], row);
        }
      }
    }
    EXPECT_EQ(groups.begin.back(), bins.num_rows);
  }
}

TEST(RowGroups, StopsWhenThereAreTooManyGroups) {
  const BinMatrix bins = RandomBins(5000, 6, 200, false, 9);  // nearly all rows distinct
  RowGroups groups;
  EXPECT_FALSE(GroupEqualRows(bins, bins.num_rows / 4 * 3, groups));
  EXPECT_EQ(groups.num_groups(), 0);
  ASSERT_TRUE(GroupEqualRows(bins, bins.num_rows, groups));
  EXPECT_GT(groups.num_groups(), bins.num_rows / 4 * 3);
}

// Rows without features have nothing to group by: no grouping (and no byte compared).
TEST(RowGroups, NoFeatureMeansNoGrouping) {
  for (bool wide : {false, true}) {
    const BinMatrix bins = RandomBins(100, 0, 4, wide, 3);
    RowGroups groups;
    EXPECT_FALSE(GroupEqualRows(bins, bins.num_rows, groups));
    EXPECT_EQ(groups.num_groups(), 0);
  }
}

}  // namespace
}  // namespace tabforge::tree
