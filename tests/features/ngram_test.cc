// Text features: tokenization, the n-gram vocabulary rules and the special features, on small
// hand-worked cases (expected values derived in the comments).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "data/csv_reader.h"
#include "features/text_features.h"
#include "test_support.h"

namespace tabforge::features {
namespace {

data::Column TextColumn(const std::string& csv) {
  data::Table table = data::ParseCsv(csv, "text.csv");
  return table.column(0);
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

TEST(Tokenize, AsScikitLearnsDefaultPattern) {
  // Single characters are dropped; punctuation separates; digits and '_' are word characters.
  EXPECT_EQ(Strings(Tokenize("A cat, the_dog; 42 x!")),
            (std::vector<std::string>{"cat", "the_dog", "42"}));
  EXPECT_TRUE(Tokenize("  ").empty());
  EXPECT_EQ(Strings(Tokenize("caf\xC3\xA9 ok")), (std::vector<std::string>{"caf\xC3\xA9", "ok"}));
}

// rows: "the cat sat", "the cat", "a dog!". Tokens: [the cat sat], [the cat], [dog] ("a" is one
// character). 1- and 2-grams: row 0 {the, cat, sat, the cat, cat sat}, row 1 {the, cat,
// the cat}, row 2 {dog}. Sorted vocabulary: cat 0, "cat sat" 1, dog 2, sat 3, the 4, "the cat" 5.
const char* kThreeRows = "text\nthe cat sat\nthe cat\na dog!\n";

TEST(NgramVectorizer, HandWorkedCounts) {
  data::Column column = TextColumn(kThreeRows);
  NgramOptions options;
  options.min_df = 1;
  options.max_n = 2;
  options.max_features = 0;
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, options, 1);
  EXPECT_EQ(vectorizer.vocabulary(),
            (std::vector<std::string>{"cat", "cat sat", "dog", "sat", "the", "the cat"}));
  SparseCounts counts = vectorizer.Transform(column, 1);
  EXPECT_EQ(counts.num_columns, 6);
  EXPECT_EQ(counts.row_offsets, (std::vector<std::int64_t>{0, 5, 8, 9}));
  EXPECT_EQ(counts.columns, (std::vector<std::int32_t>{0, 1, 3, 4, 5, 0, 4, 5, 2}));
  EXPECT_EQ(counts.counts, (std::vector<std::uint16_t>(9, 1)));
  EXPECT_EQ(counts.info[5].name, "text.__ngram__.the cat");
}

TEST(NgramVectorizer, MinDfAndMaxFeaturesWithTieRule) {
  data::Column column = TextColumn(kThreeRows);
  NgramOptions options;
  options.max_n = 2;
  options.min_df = 2;  // only cat, the, "the cat" occur in two rows
  NgramVectorizer frequent;
  frequent.Fit(column, options, 1);
  EXPECT_EQ(frequent.vocabulary(), (std::vector<std::string>{"cat", "the", "the cat"}));
  options.min_df = 1;
  options.max_features = 2;  // cat, the and "the cat" all count 2: the two smaller win
  NgramVectorizer capped;
  capped.Fit(column, options, 1);
  EXPECT_EQ(capped.vocabulary(), (std::vector<std::string>{"cat", "the"}));
}

TEST(NgramVectorizer, UnseenNgramsAndMissingRows) {
  NgramOptions options;
  options.min_df = 1;
  NgramVectorizer vectorizer;
  vectorizer.Fit(TextColumn(kThreeRows), options, 1);
  // "The bird" -> tokens the, bird: only "the" (lower-cased) is in the vocabulary.
  data::Table test = data::ParseCsv("text,n\nThe bird the,1\n,2\n", "test.csv");
  SparseCounts counts = vectorizer.Transform(test.column(0), 1);
  ASSERT_EQ(counts.row_offsets.size(), 3u);
  EXPECT_EQ(counts.row_offsets[1] - counts.row_offsets[0], 1);
  EXPECT_EQ(vectorizer.vocabulary()[counts.columns[0]], "the");
  EXPECT_EQ(counts.counts[0], 2);                           // "The" and "the"
  EXPECT_EQ(counts.row_offsets[2], counts.row_offsets[1]);  // the missing row is empty
}

TEST(NgramVectorizer, SaveLoadRoundTripAndCorruption) {
  NgramOptions options;
  options.min_df = 1;
  NgramVectorizer vectorizer;
  data::Column column = TextColumn(kThreeRows);
  vectorizer.Fit(column, options, 1);
  std::string bytes = vectorizer.Save();
  NgramVectorizer loaded = NgramVectorizer::Load(bytes);
  EXPECT_EQ(loaded.Save(), bytes);
  EXPECT_EQ(loaded.Transform(column, 1).columns, vectorizer.Transform(column, 1).columns);
  EXPECT_THROW(NgramVectorizer::Load(bytes.substr(0, bytes.size() - 3)), InvalidInput);
  EXPECT_THROW(NgramVectorizer::Load("something else"), InvalidInput);
}

TEST(NgramVectorizer, ThreadCountDoesNotMatter) {
  TFG_REQUIRE_DATASETS();
  data::Table titanic = data::ReadCsv(testing::DatasetPath("titanic.csv.gz"));
  const data::Column& name = titanic.ColumnByName("name");
  NgramOptions options;
  options.min_df = 3;
  NgramVectorizer one, four;
  one.Fit(name, options, 1);
  four.Fit(name, options, 4);
  EXPECT_GT(one.num_features(), 50);
  EXPECT_EQ(one.vocabulary(), four.vocabulary());
  SparseCounts a = one.Transform(name, 1);
  SparseCounts b = four.Transform(name, 4);
  EXPECT_EQ(a.row_offsets, b.row_offsets);
  EXPECT_EQ(a.columns, b.columns);
  EXPECT_EQ(a.counts, b.counts);
}

TEST(SpecialFeatures, HandWorkedValues) {
  // "Ab 1!": 5 characters, 2 words, 1 capital, 1 lower-case, 1 digit, 1 symbol, 1 space.
  TextSpecialFeatures features = ComputeSpecialFeatures("Ab 1!");
  EXPECT_EQ(features.char_count, 5);
  EXPECT_EQ(features.word_count, 2);
  EXPECT_FLOAT_EQ(features.capital_ratio, 0.2f);
  EXPECT_FLOAT_EQ(features.lower_ratio, 0.2f);
  EXPECT_EQ(features.digit_count, 1);
  EXPECT_EQ(features.symbol_count, 1);
  EXPECT_FLOAT_EQ(features.space_ratio, 0.2f);
  // A two-byte character counts once.
  EXPECT_EQ(ComputeSpecialFeatures("\xC3\xA9t\xC3\xA9").char_count, 3);
  data::Column column = TextColumn("text,n\nAb 1!,1\n,2\n");
  std::vector<float> out(kNumSpecialFeatures * 2);
  ComputeSpecialFeatures(column, out.data(), 1);
  EXPECT_EQ(out[0], 5);             // char_count of row 0
  EXPECT_TRUE(std::isnan(out[1]));  // row 1 is missing
  EXPECT_EQ(SpecialFeatureNames("t")[1], "t.word_count");
}

}  // namespace
}  // namespace tabforge::features
