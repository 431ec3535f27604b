#include "features/pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "data/csv_reader.h"
#include "test_support.h"

namespace tabforge::features {
namespace {

data::Table Parse(const std::string& text) { return data::ParseCsv(text, "t.csv"); }

const ColumnDecision& Decision(const FeaturePipeline& pipeline, const std::string& column) {
  for (const ColumnDecision& decision : pipeline.decisions()) {
    if (decision.column == column) return decision;
  }
  throw std::runtime_error("no decision for " + column);
}

int NumericIndex(const FeatureMatrix& matrix, const std::string& name) {
  for (int index = 0; index < matrix.num_numeric(); ++index) {
    if (matrix.numeric_info[index].name == name) return index;
  }
  return -1;
}

void ExpectSameBytes(const FeatureMatrix& a, const FeatureMatrix& b) {
  ASSERT_EQ(a.num_rows, b.num_rows);
  ASSERT_EQ(a.numeric.size(), b.numeric.size());
  EXPECT_EQ(std::memcmp(a.numeric.data(), b.numeric.data(), a.numeric.size() * sizeof(float)), 0);
  EXPECT_EQ(a.categorical, b.categorical);
  EXPECT_EQ(a.ngrams.row_offsets, b.ngrams.row_offsets);
  EXPECT_EQ(a.ngrams.columns, b.ngrams.columns);
  EXPECT_EQ(a.ngrams.counts, b.ngrams.counts);
  ASSERT_EQ(a.numeric_info.size(), b.numeric_info.size());
  for (std::size_t index = 0; index < a.numeric_info.size(); ++index) {
    EXPECT_EQ(a.numeric_info[index].name, b.numeric_info[index].name);
  }
}

// Ten rows covering every input type and every drop rule.
const char* kMixed =
    "id,color,size,flag,day,const,empty,color_copy,label\n"
    "a1,red,1.5,True,2024-02-28,k,,red,yes\n"
    "a2,red,,False,2024-02-29,k,,red,no\n"
    "a3,blue,2.5,True,2024-03-01,k,,blue,yes\n"
    "a4,blue,3.5,False,,k,,blue,no\n"
    "a5,green,4.5,True,2024-02-29,k,,green,yes\n"
    "a6,red,5.5,,2024-02-29,k,,red,no\n"
    "a7,,6.5,True,2024-02-29,k,,,yes\n"
    "a8,red,7.5,False,2024-02-29,k,,red,no\n"
    "a9,blue,8.5,True,2024-02-29,k,,blue,yes\n"
    "a10,violet,9.5,False,2024-02-29,k,,violet,no\n";

TEST(FeaturePipeline, DropsWithReasons) {
  FeaturePipeline pipeline = FeaturePipeline::Fit(Parse(kMixed), "label");
  ASSERT_EQ(pipeline.decisions().size(), 9u);
  EXPECT_FALSE(Decision(pipeline, "label").kept);
  EXPECT_FALSE(Decision(pipeline, "id").kept);
  EXPECT_NE(Decision(pipeline, "id").reason.find("ID-like"), std::string::npos);
  EXPECT_FALSE(Decision(pipeline, "const").kept);
  EXPECT_NE(Decision(pipeline, "const").reason.find("constant"), std::string::npos);
  EXPECT_FALSE(Decision(pipeline, "empty").kept);
  EXPECT_NE(Decision(pipeline, "empty").reason.find("missing"), std::string::npos);
  EXPECT_FALSE(Decision(pipeline, "color_copy").kept);
  EXPECT_EQ(Decision(pipeline, "color_copy").reason, "duplicate of column 'color'");
  for (const char* kept : {"color", "size", "flag", "day"}) {
    EXPECT_TRUE(Decision(pipeline, kept).kept) << kept;
  }
  EXPECT_EQ(Decision(pipeline, "day").outputs,
            (std::vector<std::string>{"day", "day.year", "day.month", "day.day", "day.dayofweek"}));
}

TEST(FeaturePipeline, CategoricalCodesByFrequencyWithRareUnknownMissing) {
  data::Table train = Parse(kMixed);
  FeaturePipeline pipeline = FeaturePipeline::Fit(train, "label");
  FeatureMatrix matrix = pipeline.Transform(train, 1);
  ASSERT_EQ(matrix.num_categorical(), 1);
  // Training counts: red 4, blue 3, green 1, violet 1, missing 1. With min count 2, codes are
  // red 0, blue 1; green and violet share rare 2; unknown is 3, missing 4; cardinality 5.
  EXPECT_EQ(matrix.categorical_info[0].cardinality, 5);
  // Sorted, blue comes before red; rare, unknown and missing after them.
  EXPECT_EQ(matrix.categorical_info[0].sorted_rank, (std::vector<std::int32_t>{1, 0, 2, 3, 4}));
  const std::int32_t* codes = matrix.CategoricalColumn(0);
  EXPECT_EQ(std::vector<std::int32_t>(codes, codes + 10),
            (std::vector<std::int32_t>{0, 0, 1, 1, 2, 0, 4, 0, 1, 2}));
  data::Table test = Parse(
      "color,size,flag,day,extra\n"
      "blue,1,True,2024-01-01,z\n"
      "orange,2,False,2024-01-02,z\n"
      ",3,True,2024-01-03,z\n");
  FeatureMatrix test_matrix = pipeline.Transform(test);
  const std::int32_t* test_codes = test_matrix.CategoricalColumn(0);
  EXPECT_EQ(std::vector<std::int32_t>(test_codes, test_codes + 3),
            (std::vector<std::int32_t>{1, 3, 4}));  // blue, unseen -> unknown, missing
}

TEST(FeaturePipeline, NumericBooleanAndDatetimeAcrossLeapDay) {
  data::Table train = Parse(kMixed);
  FeatureMatrix matrix = FeaturePipeline::Fit(train, "label").Transform(train);
  const float* size = matrix.NumericColumn(NumericIndex(matrix, "size"));
  EXPECT_FLOAT_EQ(size[0], 1.5f);
  EXPECT_TRUE(std::isnan(size[1]));
  const float* flag = matrix.NumericColumn(NumericIndex(matrix, "flag"));
  EXPECT_EQ(flag[0], 1.0f);
  EXPECT_EQ(flag[1], 0.0f);
  EXPECT_TRUE(std::isnan(flag[5]));
  // 2024-02-28 (Wednesday, weekday 2), 2024-02-29 (Thursday, 3), 2024-03-01 (Friday, 4).
  const float* month = matrix.NumericColumn(NumericIndex(matrix, "day.month"));
  const float* day = matrix.NumericColumn(NumericIndex(matrix, "day.day"));
  const float* weekday = matrix.NumericColumn(NumericIndex(matrix, "day.dayofweek"));
  const float* year = matrix.NumericColumn(NumericIndex(matrix, "day.year"));
  EXPECT_EQ(std::vector<float>(month, month + 3), (std::vector<float>{2, 2, 3}));
  EXPECT_EQ(std::vector<float>(day, day + 3), (std::vector<float>{28, 29, 1}));
  EXPECT_EQ(std::vector<float>(weekday, weekday + 3), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(year[2], 2024.0f);
  EXPECT_TRUE(std::isnan(month[3]));  // missing date
  // Epoch seconds of 2024-02-29 (1709164800) in float32.
  EXPECT_EQ(matrix.NumericColumn(NumericIndex(matrix, "day"))[1], 1709164800.0f);
}

TEST(FeaturePipeline, HourOnlyWhenTimesArePresent) {
  data::Table train = Parse("t,y\n2024-01-01 10:30:00,a\n2024-01-02 23:00:00,b\n2024-01-03,a\n");
  FeaturePipeline pipeline = FeaturePipeline::Fit(train, "y");
  FeatureMatrix matrix = pipeline.Transform(train);
  int hour = NumericIndex(matrix, "t.hour");
  ASSERT_GE(hour, 0);
  EXPECT_EQ(std::vector<float>(matrix.NumericColumn(hour), matrix.NumericColumn(hour) + 3),
            (std::vector<float>{10, 23, 0}));
}

TEST(FeaturePipeline, MissingIndicatorOnlyWhereMissingnessTellsAboutTheLabel) {
  std::string text = "informative,random,y\n";
  for (int row = 0; row < 200; ++row) {
    bool positive = row % 2 == 0;
    // "informative" is missing in a third of the positive rows and never otherwise;
    // "random" is missing every fourth row, half of them positive.
    std::string informative = positive && row % 3 == 0 ? "" : std::to_string(row);
    std::string random = row % 4 == 1 || row % 4 == 2 ? "" : std::to_string(row);
    text += informative + "," + random + "," + (positive ? "yes" : "no") + "\n";
  }
  FeaturePipeline pipeline = FeaturePipeline::Fit(Parse(text), "y");
  EXPECT_EQ(Decision(pipeline, "informative").outputs,
            (std::vector<std::string>{"informative", "informative.is_missing"}));
  EXPECT_EQ(Decision(pipeline, "random").outputs, (std::vector<std::string>{"random"}));
}

TEST(FeaturePipeline, SchemaChecksAtTransform) {
  FeaturePipeline pipeline = FeaturePipeline::Fit(Parse(kMixed), "label");
  try {
    pipeline.Transform(Parse("color,flag\nred,True\n"));
    FAIL();
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("'size', 'day'"), std::string::npos) << error.what();
  }
  try {
    pipeline.Transform(Parse("color,size,flag,day\nred,big,True,2024-01-01\n"));
    FAIL();
  } catch (const InvalidInput& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("column 'size' was numeric"), std::string::npos) << message;
    EXPECT_NE(message.find("'big'"), std::string::npos) << message;
  }
  // A categorical column whose new values all look like numbers still maps by their text.
  FeaturePipeline codes = FeaturePipeline::Fit(Parse("c,y\n10,a\nx,b\n10,a\nx,b\n"), "y");
  FeatureMatrix matrix = codes.Transform(Parse("c\n10\n"));
  EXPECT_EQ(matrix.CategoricalColumn(0)[0], 0);
}

TEST(FeaturePipeline, SaveLoadRoundTripIsByteIdentical) {
  data::Table train = Parse(kMixed);
  FeaturePipeline pipeline = FeaturePipeline::Fit(train, "label");
  std::string dir = testing::TempDir("pipeline");
  pipeline.Save(dir + "/features.bin");
  FeaturePipeline loaded = FeaturePipeline::Load(dir + "/features.bin");
  EXPECT_EQ(loaded.Serialize(), pipeline.Serialize());
  ExpectSameBytes(pipeline.Transform(train), loaded.Transform(train));
  ASSERT_EQ(loaded.decisions().size(), pipeline.decisions().size());
  EXPECT_EQ(loaded.decisions()[0].reason, pipeline.decisions()[0].reason);

  std::string bytes = pipeline.Serialize();
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x20;
  EXPECT_THROW(FeaturePipeline::Deserialize(flipped, "features.bin"), InvalidInput);
  EXPECT_THROW(FeaturePipeline::Deserialize(bytes.substr(0, bytes.size() / 2), "features.bin"),
               InvalidInput);
  std::string newer = bytes;
  newer.replace(newer.find(" 1\n"), 3, " 9\n");
  try {
    FeaturePipeline::Deserialize(newer, "features.bin");
    FAIL();
  } catch (const InvalidInput& error) {
    // The checksum catches the edit first; either message names the file.
    EXPECT_NE(std::string(error.what()).find("features.bin"), std::string::npos);
  }
}

TEST(FeaturePipeline, TitanicTextColumns) {
  TFG_REQUIRE_DATASETS();
  data::Table titanic = data::ReadCsv(testing::DatasetPath("titanic.csv.gz"));
  FeaturePipeline pipeline = FeaturePipeline::Fit(titanic, "survived");
  const ColumnDecision& name = Decision(pipeline, "name");
  EXPECT_TRUE(name.kept);
  EXPECT_EQ(name.input_type, data::ColumnType::kText);
  FeatureMatrix matrix = pipeline.Transform(titanic);
  // Titles such as "mr" and "miss" appear in far more than min_df = 30 names.
  EXPECT_GT(matrix.ngrams.num_columns, 0);
  bool has_mr = false;
  for (const FeatureInfo& info : matrix.ngrams.info)
    has_mr = has_mr || info.name == "name.__ngram__.mr";
  EXPECT_TRUE(has_mr);
  EXPECT_EQ(static_cast<std::int64_t>(matrix.ngrams.row_offsets.size()), titanic.num_rows() + 1);
  EXPECT_TRUE(Decision(pipeline, "sex").kept);
  EXPECT_TRUE(Decision(pipeline, "ticket").kept);  // repeated tickets: categorical, not an ID
  EXPECT_GE(NumericIndex(matrix, "age"), 0);
  std::string dir = testing::TempDir("titanic");
  pipeline.Save(dir + "/f.bin");
  ExpectSameBytes(matrix, FeaturePipeline::Load(dir + "/f.bin").Transform(titanic, 1));
}

TEST(FeaturePipeline, DiabetesIdColumnsDropped) {
  TFG_REQUIRE_DATASETS();
  data::Table table = data::ReadCsv(testing::DatasetPath("diabetes_130us.csv.gz"));
  FeaturePipeline pipeline = FeaturePipeline::Fit(table, "readmitted");
  EXPECT_FALSE(Decision(pipeline, "encounter_id").kept);
  EXPECT_NE(Decision(pipeline, "encounter_id").reason.find("ID-like"), std::string::npos);
  EXPECT_FALSE(Decision(pipeline, "patient_nbr").kept);
  EXPECT_TRUE(Decision(pipeline, "diag_1").kept);
  EXPECT_TRUE(Decision(pipeline, "num_lab_procedures").kept);
  EXPECT_TRUE(Decision(pipeline, "weight").kept);  // 97% missing, but not entirely
  // Thread count does not change the output.
  ExpectSameBytes(pipeline.Transform(table, 1), pipeline.Transform(table, 4));
}

TEST(FeaturePipeline, AdultKeepsEveryFeature) {
  TFG_REQUIRE_DATASETS();
  data::Table train = data::ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  FeaturePipeline pipeline = FeaturePipeline::Fit(train, "class");
  FeatureMatrix matrix =
      pipeline.Transform(data::ReadCsv(testing::DatasetPath("adult_test.csv.gz")));
  EXPECT_EQ(matrix.num_rows, 16281);
  EXPECT_EQ(matrix.num_categorical(), 8);
  EXPECT_GE(matrix.num_numeric(), 6);  // fnlwgt is a weight, not an ID
  EXPECT_GE(NumericIndex(matrix, "fnlwgt"), 0);
}

}  // namespace
}  // namespace tabforge::features
