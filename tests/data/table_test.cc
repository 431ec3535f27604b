#include "data/table.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/csv_reader.h"

namespace tabforge::data {
namespace {

TEST(Table, SelectRowsKeepsTypesValuesAndCodes) {
  const Table table =
      ParseCsv("x,colour,when,flag\n1.5,red,2020-01-02,True\n,blue,2021-03-04,False\n3,red,,\n",
               "t.csv", {});
  const Table picked = SelectRows(table, {2, 0, 0});
  ASSERT_EQ(picked.num_rows(), 3);
  ASSERT_EQ(picked.num_columns(), table.num_columns());
  for (int column = 0; column < table.num_columns(); ++column) {
    EXPECT_EQ(picked.column(column).type(), table.column(column).type());
    EXPECT_EQ(picked.column(column).name(), table.column(column).name());
    EXPECT_EQ(picked.column(column).CellText(0), table.column(column).CellText(2));
    EXPECT_EQ(picked.column(column).CellText(1), table.column(column).CellText(0));
    EXPECT_EQ(picked.column(column).CellText(2), table.column(column).CellText(0));
  }
  // Codes keep their meaning: the same dictionary.
  EXPECT_EQ(picked.ColumnByName("colour").codes()[0], table.ColumnByName("colour").codes()[2]);
  EXPECT_TRUE(picked.ColumnByName("when").IsMissing(0));
  EXPECT_EQ(SelectRows(table, {}).num_rows(), 0);
  EXPECT_THROW(SelectRows(table, {3}), Error);
}

}  // namespace
}  // namespace tabforge::data
