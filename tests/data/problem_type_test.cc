#include "data/problem_type.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/csv_reader.h"

namespace tabforge::data {
namespace {

Table Parse(const std::string& text) { return ParseCsv(text, "labels.csv"); }

std::string Rows(const std::string& header, int count, const std::function<std::string(int)>& row) {
  std::string text = header + "\n";
  for (int index = 0; index < count; ++index) text += row(index) + "\n";
  return text;
}

TEST(ProblemType, BinaryPositiveClassIsLastSorted) {
  LabelSummary strings = AnalyzeLabel(Parse("y\nno\nyes\nno\n"), "y");
  EXPECT_EQ(strings.problem_type, ProblemType::kBinary);
  EXPECT_EQ(strings.positive_class, "yes");
  EXPECT_EQ(strings.class_counts, (std::vector<std::int64_t>{2, 1}));
  LabelSummary numbers = AnalyzeLabel(Parse("y\n1\n0\n1\n"), "y");
  EXPECT_EQ(numbers.positive_class, "1");
  LabelSummary booleans = AnalyzeLabel(Parse("y\nTrue\nFalse\n"), "y");
  EXPECT_EQ(booleans.positive_class, "True");
  // Numeric order, not text order: 10 > 9.
  LabelSummary numeric_order = AnalyzeLabel(Parse("y\n10\n9\n"), "y");
  EXPECT_EQ(numeric_order.positive_class, "10");
}

TEST(ProblemType, MulticlassAndRegressionThresholds) {
  // Strings with three values: multiclass.
  EXPECT_EQ(AnalyzeLabel(Parse("y\na\nb\nc\n"), "y").problem_type, ProblemType::kMulticlass);
  // 2000 rows, integers with 100 distinct values (5%): multiclass; 101 values: regression.
  auto integers = [](int distinct) {
    return Rows("y", 2000, [=](int row) { return std::to_string(row % distinct); });
  };
  EXPECT_EQ(AnalyzeLabel(Parse(integers(100)), "y").problem_type, ProblemType::kMulticlass);
  EXPECT_EQ(AnalyzeLabel(Parse(integers(101)), "y").problem_type, ProblemType::kRegression);
  // Small data (<= 1000 rows) allows 10%.
  std::string small = Rows("y", 500, [](int row) { return std::to_string(row % 50); });
  EXPECT_EQ(AnalyzeLabel(Parse(small), "y").problem_type, ProblemType::kMulticlass);
  // Fractional values: regression, however few.
  std::string fractional = Rows("y", 500, [](int row) { return std::to_string(row % 3) + ".5"; });
  EXPECT_EQ(AnalyzeLabel(Parse(fractional), "y").problem_type, ProblemType::kRegression);
  LabelSummary regression = AnalyzeLabel(Parse("y\n1.5\n2.5\n3.5\n4.5\n"), "y");
  EXPECT_EQ(regression.problem_type, ProblemType::kRegression);
  EXPECT_DOUBLE_EQ(regression.mean, 3.0);
  EXPECT_DOUBLE_EQ(regression.min, 1.5);
}

TEST(ProblemType, OverrideAndErrors) {
  LabelSummary forced = AnalyzeLabel(Parse("y\n1\n2\n3\n"), "y", ProblemType::kRegression);
  EXPECT_EQ(forced.problem_type, ProblemType::kRegression);
  EXPECT_FALSE(forced.inferred);
  EXPECT_THROW(AnalyzeLabel(Parse("y\na\nb\n"), "y", ProblemType::kRegression), InvalidInput);
  EXPECT_THROW(AnalyzeLabel(Parse("y\na\nb\nc\n"), "y", ProblemType::kBinary), InvalidInput);
  try {
    AnalyzeLabel(Parse("age,Class\n1,a\n2,b\n"), "class");
    FAIL();
  } catch (const InvalidInput& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("'class' does not exist"), std::string::npos) << message;
    EXPECT_NE(message.find("'age', 'Class'"), std::string::npos) << message;
  }
  try {
    AnalyzeLabel(Parse("x,y\n1,same\n2,same\n3,\n"), "y");
    FAIL();
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("1 distinct value ('same')"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(ParseProblemType("classification"), InvalidInput);
  EXPECT_EQ(ParseProblemType("multiclass"), ProblemType::kMulticlass);
}

TEST(ProblemType, MissingLabelsAreCounted) {
  LabelSummary summary = AnalyzeLabel(Parse("x,y\n1,a\n2,\n3,b\n"), "y");
  EXPECT_EQ(summary.missing, 1);
  EXPECT_EQ(summary.problem_type, ProblemType::kBinary);
}

}  // namespace
}  // namespace tabforge::data
