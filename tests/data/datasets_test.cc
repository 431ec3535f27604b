// Every public dataset is read with the row and column counts of ../shared/datasets/README.md
// (and manifest.json), and its label's inferred problem type is the task named there.
#include <gtest/gtest.h>

#include "data/column_stats.h"
#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "test_support.h"

namespace tabforge::data {
namespace {

struct DatasetCase {
  const char* file;
  const char* label;
  std::int64_t rows;
  int columns;
  ProblemType task;
};

// Figures from the summary table of ../shared/datasets/README.md.
const DatasetCase kDatasets[] = {
    {"adult_train.csv.gz", "class", 32561, 15, ProblemType::kBinary},
    {"adult_test.csv.gz", "class", 16281, 15, ProblemType::kBinary},
    {"bank_marketing.csv.gz", "y", 45211, 17, ProblemType::kBinary},
    {"letter.csv.gz", "lettr", 20000, 17, ProblemType::kMulticlass},
    {"diamonds.csv.gz", "price", 53940, 10, ProblemType::kRegression},
    {"bike_sharing_hour.csv.gz", "cnt", 17379, 17, ProblemType::kRegression},
    {"titanic.csv.gz", "survived", 891, 11, ProblemType::kBinary},
    {"california_housing.csv.gz", "median_house_value", 20640, 10, ProblemType::kRegression},
    {"kddcup99_10pct.csv.gz", "label", 494021, 42, ProblemType::kMulticlass},
    {"skin_segmentation.csv.gz", "y", 245057, 4, ProblemType::kBinary},
    {"diabetes_130us.csv.gz", "readmitted", 101766, 50, ProblemType::kMulticlass},
};

// Names the case by its file in test output.
void PrintTo(const DatasetCase& dataset, std::ostream* out) { *out << dataset.file; }

class Datasets : public ::testing::TestWithParam<DatasetCase> {};

TEST_P(Datasets, ReadWithDocumentedShapeAndTask) {
  TFG_REQUIRE_DATASETS();
  const DatasetCase& expected = GetParam();
  Table table = ReadCsv(testing::DatasetPath(expected.file));
  EXPECT_EQ(table.num_rows(), expected.rows);
  EXPECT_EQ(table.num_columns(), expected.columns);
  LabelSummary label = AnalyzeLabel(table, expected.label);
  EXPECT_EQ(label.problem_type, expected.task) << label.reason;
  EXPECT_EQ(label.missing, 0);
}

INSTANTIATE_TEST_SUITE_P(All, Datasets, ::testing::ValuesIn(kDatasets),
                         [](const ::testing::TestParamInfo<DatasetCase>& param_info) {
                           std::string name = param_info.param.file;
                           return name.substr(0, name.find('.'));
                         });

TEST(DatasetDetails, AdultTypesMissingAndPositiveClass) {
  TFG_REQUIRE_DATASETS();
  Table table = ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  // README: 6 numeric and 8 categorical features; missing workclass 1,836, occupation 1,843,
  // native-country 583; class <=50K 24,720 / >50K 7,841.
  int numeric = 0, categorical = 0;
  for (const Column& column : table.columns()) {
    if (column.name() == "class") continue;
    numeric += column.type() == ColumnType::kNumeric;
    categorical += column.type() == ColumnType::kCategorical;
  }
  EXPECT_EQ(numeric, 6);
  EXPECT_EQ(categorical, 8);
  EXPECT_EQ(table.ColumnByName("workclass").MissingCount(), 1836);
  EXPECT_EQ(table.ColumnByName("occupation").MissingCount(), 1843);
  EXPECT_EQ(table.ColumnByName("native-country").MissingCount(), 583);
  LabelSummary label = AnalyzeLabel(table, "class");
  ASSERT_EQ(label.classes.size(), 2u);
  EXPECT_EQ(label.classes[0], "<=50K");
  EXPECT_EQ(label.class_counts[0], 24720);
  EXPECT_EQ(label.class_counts[1], 7841);
  EXPECT_EQ(label.positive_class, ">50K");
}

TEST(DatasetDetails, TitanicTextAndBikeSharingDatetime) {
  TFG_REQUIRE_DATASETS();
  Table titanic = ReadCsv(testing::DatasetPath("titanic.csv.gz"));
  // Names ("Braund, Mr. Owen Harris") are unique, many-word strings: text by AutoGluon's rule.
  EXPECT_EQ(titanic.ColumnByName("name").type(), ColumnType::kText);
  EXPECT_EQ(titanic.ColumnByName("sex").type(), ColumnType::kCategorical);
  EXPECT_EQ(titanic.ColumnByName("age").MissingCount(), 177);
  EXPECT_EQ(titanic.ColumnByName("cabin").MissingCount(), 687);
  EXPECT_EQ(titanic.ColumnByName("embarked").MissingCount(), 2);
  Table bike = ReadCsv(testing::DatasetPath("bike_sharing_hour.csv.gz"));
  const Column& day = bike.ColumnByName("dteday");
  EXPECT_EQ(day.type(), ColumnType::kDatetime);
  EXPECT_EQ(day.CellText(0), "2011-01-01");
  EXPECT_EQ(day.CellText(bike.num_rows() - 1), "2012-12-31");
  std::vector<ColumnStats> stats = ComputeTableStats(bike);
  EXPECT_TRUE(stats[bike.ColumnIndex("instant")].is_id);  // the README's row index
  EXPECT_FALSE(stats[bike.ColumnIndex("temp")].is_id);
}

TEST(DatasetDetails, DiabetesIdColumnsAndMissing) {
  TFG_REQUIRE_DATASETS();
  Table table = ReadCsv(testing::DatasetPath("diabetes_130us.csv.gz"));
  std::vector<ColumnStats> stats = ComputeTableStats(table);
  EXPECT_TRUE(stats[table.ColumnIndex("encounter_id")].is_id);
  EXPECT_FALSE(stats[table.ColumnIndex("patient_nbr")].is_id);  // patients repeat
  EXPECT_EQ(stats[table.ColumnIndex("patient_nbr")].distinct, 71518);
  EXPECT_EQ(table.ColumnByName("weight").MissingCount(), 98569);
  EXPECT_EQ(table.ColumnByName("medical_specialty").MissingCount(), 49949);
  // "None" is a real category in max_glu_serum, but a default missing token, as in pandas.
  EXPECT_EQ(table.ColumnByName("diag_1").MissingCount(), 21);
}

TEST(DatasetDetails, ThreadCountDoesNotChangeTheTable) {
  TFG_REQUIRE_DATASETS();
  CsvOptions one;
  one.num_threads = 1;
  CsvOptions four;
  four.num_threads = 4;
  Table a = ReadCsv(testing::DatasetPath("kddcup99_10pct.csv.gz"), one);
  Table b = ReadCsv(testing::DatasetPath("kddcup99_10pct.csv.gz"), four);
  ASSERT_EQ(a.num_columns(), b.num_columns());
  for (int column = 0; column < a.num_columns(); ++column) {
    const Column& left = a.column(column);
    const Column& right = b.column(column);
    ASSERT_EQ(left.type(), right.type());
    if (left.type() == ColumnType::kNumeric) {
      EXPECT_EQ(left.numeric(), right.numeric());
    }
    if (left.type() == ColumnType::kCategorical) {
      EXPECT_EQ(left.codes(), right.codes());
    }
  }
}

}  // namespace
}  // namespace tabforge::data
