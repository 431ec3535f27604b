#include "features/text_features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/csv_reader.h"
#include "data/table.h"

namespace tabforge::features {
namespace {

using data::Column;
using data::ColumnType;

// A string column built by hand; nullopt is a missing cell.
Column MakeColumn(const std::vector<std::optional<std::string>>& values,
                  ColumnType type = ColumnType::kText, const std::string& name = "t") {
  Column column(name, type);
  for (const auto& value : values) {
    column.codes().push_back(value ? column.dictionary().Insert(*value) : data::kMissingCode);
  }
  return column;
}

// Column "t" of a CSV whose columns are "id,t".
Column ParseTextColumn(const std::string& csv) {
  data::Table table = data::ParseCsv(csv, "t.csv");
  Column column = table.ColumnByName("t");
  EXPECT_TRUE(column.type() == ColumnType::kText || column.type() == ColumnType::kCategorical);
  return column;
}

NgramOptions Options(int min_df, int max_n = 3, int max_features = 10000) {
  NgramOptions options;
  options.min_df = min_df;
  options.max_n = max_n;
  options.max_features = max_features;
  return options;
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

void ExpectSameCounts(const SparseCounts& left, const SparseCounts& right) {
  EXPECT_EQ(left.num_columns, right.num_columns);
  EXPECT_EQ(left.row_offsets, right.row_offsets);
  EXPECT_EQ(left.columns, right.columns);
  EXPECT_EQ(left.counts, right.counts);
  ASSERT_EQ(left.info.size(), right.info.size());
  for (std::size_t feature = 0; feature < left.info.size(); ++feature) {
    EXPECT_EQ(left.info[feature].name, right.info[feature].name);
    EXPECT_EQ(left.info[feature].source, right.info[feature].source);
  }
}

TEST(Tokenize, FollowsScikitLearnTokenPattern) {
  // Python: re.findall(r"(?u)\b\w\w+\b", same text) gives exactly these tokens: punctuation
  // splits, one-character tokens ("a", "I", "7", "é", "d") drop, digits and '_' are word
  // characters, "é" (two bytes, one code point) is too short alone but part of "café".
  EXPECT_EQ(Strings(Tokenize("Hello, world! a I x_y 42 7 __ \xC3\xA9 caf\xC3\xA9 ab_c-d e2e")),
            (std::vector<std::string>{"Hello", "world", "x_y", "42", "__", "caf\xC3\xA9", "ab_c",
                                      "e2e"}));
  EXPECT_TRUE(Tokenize("").empty());
  EXPECT_TRUE(Tokenize("a b c ! ?").empty());
}

TEST(NgramVectorizer, LowercasesBeforeCounting) {
  NgramVectorizer vectorizer;
  vectorizer.Fit(MakeColumn({"Red RED red", "Blue-Sky 2024_Q1"}), Options(1, 1), 1);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"2024_q1", "blue", "red", "sky"}));
  SparseCounts counts = vectorizer.Transform(MakeColumn({"rEd"}), 1);
  EXPECT_EQ(counts.columns, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(counts.counts, (std::vector<std::uint16_t>{1}));

  NgramOptions keep_case = Options(1, 1);
  keep_case.lowercase = false;
  vectorizer.Fit(MakeColumn({"Zebra apple zebra"}), keep_case, 1);
  // Bytewise order puts upper case first, as scikit-learn's sorted() does with lowercase=False.
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"Zebra", "apple", "zebra"}));
}

TEST(NgramVectorizer, CountsHandExample) {
  Column column = ParseTextColumn("id,t\n1,The cat sat\n2,\"the cat, the CAT!\"\n3,a dog\n");
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, Options(1), 1);
  // Tokens (lower-cased): [the cat sat], [the cat the cat], [dog] ("a" is too short).
  // Row 0: the, cat, sat, "the cat", "cat sat", "the cat sat" once each.
  // Row 1: the x2, cat x2, "the cat" x2, "cat the", "the cat the", "cat the cat".
  // Row 2: dog.
  // Sorted vocabulary: 0 cat, 1 cat sat, 2 cat the, 3 cat the cat, 4 dog, 5 sat, 6 the,
  // 7 the cat, 8 the cat sat, 9 the cat the.
  // scikit-learn 1.9.1 CountVectorizer(ngram_range=(1, 3), min_df=1) on the same three texts
  // gives this vocabulary and indptr [0 6 12 13], indices [0 1 5 6 7 8 0 2 3 6 7 9 4],
  // data [1 1 1 1 1 1 2 1 1 2 2 1 1].
  EXPECT_EQ(vectorizer.vocabulary(),
            (std::vector<std::string>{"cat", "cat sat", "cat the", "cat the cat", "dog", "sat",
                                      "the", "the cat", "the cat sat", "the cat the"}));
  SparseCounts counts = vectorizer.Transform(column, 1);
  EXPECT_EQ(counts.num_columns, 10);
  EXPECT_EQ(counts.row_offsets, (std::vector<std::int64_t>{0, 6, 12, 13}));
  EXPECT_EQ(counts.columns, (std::vector<std::int32_t>{0, 1, 5, 6, 7, 8, 0, 2, 3, 6, 7, 9, 4}));
  EXPECT_EQ(counts.counts, (std::vector<std::uint16_t>{1, 1, 1, 1, 1, 1, 2, 1, 1, 2, 2, 1, 1}));
  ASSERT_EQ(counts.info.size(), 10u);
  EXPECT_EQ(counts.info[3].name, "t.__ngram__.cat the cat");
  EXPECT_EQ(counts.info[3].source, "t");
}

TEST(NgramVectorizer, MinDfCountsRowsNotOccurrences) {
  // apple: 3 rows (two of them the same value); banana: 2 rows; kiwi: 1 row, 3 times.
  Column column = MakeColumn(
      {"apple banana", "apple banana", "apple", "kiwi kiwi kiwi", std::nullopt, std::nullopt});
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, Options(3, 1), 2);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"apple"}));
  vectorizer.Fit(column, Options(2, 1), 2);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"apple", "banana"}));
  // "apple banana" is in 2 rows, "kiwi kiwi" in 1.
  vectorizer.Fit(column, Options(2, 2), 2);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"apple", "apple banana", "banana"}));
  // Nothing frequent enough: an empty vocabulary and empty rows.
  vectorizer.Fit(column, Options(4), 2);
  EXPECT_EQ(vectorizer.num_features(), 0);
  SparseCounts counts = vectorizer.Transform(column, 2);
  EXPECT_EQ(counts.row_offsets, std::vector<std::int64_t>(7, 0));
}

TEST(NgramVectorizer, MaxFeaturesKeepsMostFrequentWithTieRule) {
  // Total counts: zeta 3, beta 2, alpha 2, gamma 1. Two features: zeta, then the tie between
  // alpha and beta goes to the bytewise smaller alpha; the vocabulary is then sorted.
  Column column = MakeColumn({"zeta zeta zeta", "beta beta", "alpha alpha", "gamma"});
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, Options(1, 1, 2), 1);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"alpha", "zeta"}));
  vectorizer.Fit(column, Options(1, 1, 3), 1);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"alpha", "beta", "zeta"}));
  vectorizer.Fit(column, Options(1, 1, 0), 1);  // no limit
  EXPECT_EQ(vectorizer.num_features(), 4);
}

TEST(NgramVectorizer, VocabularyIsAlphabetical) {
  NgramVectorizer vectorizer;
  vectorizer.Fit(MakeColumn({"pear mango apple", "mango kiwi"}), Options(1, 2), 1);
  EXPECT_EQ(vectorizer.vocabulary(),
            (std::vector<std::string>{"apple", "kiwi", "mango", "mango apple", "mango kiwi", "pear",
                                      "pear mango"}));
}

TEST(NgramVectorizer, IgnoresUnseenNgramsAndMissingRows) {
  NgramVectorizer vectorizer;
  vectorizer.Fit(MakeColumn({"red apple", "green apple"}), Options(1, 2), 1);
  // Vocabulary: 0 apple, 1 green, 2 green apple, 3 red, 4 red apple.
  Column test = MakeColumn({"red banana", std::nullopt, "purple plum", "Apple apple"},
                           ColumnType::kCategorical);
  SparseCounts counts = vectorizer.Transform(test, 1);
  EXPECT_EQ(counts.row_offsets, (std::vector<std::int64_t>{0, 1, 1, 1, 2}));
  EXPECT_EQ(counts.columns, (std::vector<std::int32_t>{3, 0}));
  EXPECT_EQ(counts.counts, (std::vector<std::uint16_t>{1, 2}));
}

TEST(NgramVectorizer, MissingCsvCellsGiveEmptyRows) {
  Column column = ParseTextColumn("id,t\n1,good film\n2,\n3,good\n");
  ASSERT_TRUE(column.IsMissing(1));
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, Options(1), 1);
  EXPECT_EQ(vectorizer.vocabulary(), (std::vector<std::string>{"film", "good", "good film"}));
  SparseCounts counts = vectorizer.Transform(column, 1);
  EXPECT_EQ(counts.row_offsets, (std::vector<std::int64_t>{0, 3, 3, 4}));
}

TEST(NgramVectorizer, SaturatesCountsAndRejectsBadInput) {
  std::string many;
  for (int repeat = 0; repeat < 70000; ++repeat) many += "ab ";
  NgramVectorizer vectorizer;
  vectorizer.Fit(MakeColumn({many}), Options(1, 1), 1);
  SparseCounts counts = vectorizer.Transform(MakeColumn({many}), 1);
  EXPECT_EQ(counts.counts, (std::vector<std::uint16_t>{65535}));

  EXPECT_THROW(vectorizer.Fit(MakeColumn({"x"}), Options(0), 1), InvalidInput);
  NgramOptions reversed = Options(1);
  reversed.min_n = 3;
  reversed.max_n = 2;
  EXPECT_THROW(vectorizer.Fit(MakeColumn({"x"}), reversed, 1), InvalidInput);
  Column numeric("n", ColumnType::kNumeric);
  numeric.numeric() = {1.0, 2.0};
  EXPECT_THROW(vectorizer.Fit(numeric, Options(1), 1), InvalidInput);
  EXPECT_THROW(vectorizer.Transform(numeric, 1), InvalidInput);
  std::vector<float> out(2 * kNumSpecialFeatures);
  EXPECT_THROW(ComputeSpecialFeatures(numeric, out.data(), 1), InvalidInput);
}

TEST(SpecialFeatures, HandExample) {
  // "Hi there, 42 cats!": 18 characters, 4 words; capitals H (1); lower i,t,h,e,r,e,c,a,t,s
  // (10); digits 4,2 (2); symbols ',' and '!' (2); spaces 3.
  TextSpecialFeatures features = ComputeSpecialFeatures("Hi there, 42 cats!");
  EXPECT_EQ(features.char_count, 18);
  EXPECT_EQ(features.word_count, 4);
  EXPECT_FLOAT_EQ(features.capital_ratio, 1.0f / 18);
  EXPECT_FLOAT_EQ(features.lower_ratio, 10.0f / 18);
  EXPECT_EQ(features.digit_count, 2);
  EXPECT_FLOAT_EQ(features.digit_ratio, 2.0f / 18);
  EXPECT_EQ(features.symbol_count, 2);
  EXPECT_FLOAT_EQ(features.symbol_ratio, 2.0f / 18);
  EXPECT_FLOAT_EQ(features.space_ratio, 3.0f / 18);

  // "\xC3\x87a va" is "Ça va": 5 code points in 6 bytes; Ç is in no ASCII class.
  features = ComputeSpecialFeatures(
      "\xC3\x87"
      "a va");
  EXPECT_EQ(features.char_count, 5);
  EXPECT_EQ(features.word_count, 2);
  EXPECT_EQ(features.capital_ratio, 0);
  EXPECT_FLOAT_EQ(features.lower_ratio, 3.0f / 5);
  EXPECT_FLOAT_EQ(features.space_ratio, 1.0f / 5);

  // The empty string: counts 0 and ratios 0 (not NaN).
  for (float value : ComputeSpecialFeatures("").Values()) EXPECT_EQ(value, 0);
}

TEST(SpecialFeatures, FillsColumnMajorWithNanForMissing) {
  EXPECT_EQ(SpecialFeatureNames("review"),
            (std::vector<std::string>{
                "review.char_count", "review.word_count", "review.capital_ratio",
                "review.lower_ratio", "review.digit_count", "review.digit_ratio",
                "review.symbol_count", "review.symbol_ratio", "review.space_ratio"}));
  Column column = MakeColumn({"Hi there, 42 cats!", std::nullopt, "", "Hi there, 42 cats!"});
  const std::int64_t rows = column.size();
  std::vector<float> out(kNumSpecialFeatures * rows, -1.0f);
  ComputeSpecialFeatures(column, out.data(), 4);
  const auto expected = ComputeSpecialFeatures("Hi there, 42 cats!").Values();
  for (int feature = 0; feature < kNumSpecialFeatures; ++feature) {
    EXPECT_EQ(out[feature * rows + 0], expected[feature]);
    EXPECT_TRUE(std::isnan(out[feature * rows + 1]));
    EXPECT_EQ(out[feature * rows + 2], 0.0f);
    EXPECT_EQ(out[feature * rows + 3], expected[feature]);
  }
  EXPECT_EQ(out[0 * rows + 0], 18.0f);  // char_count of row 0
  EXPECT_EQ(out[1 * rows + 3], 4.0f);   // word_count of row 3
}

TEST(NgramVectorizer, SaveLoadRoundTrip) {
  // A column name with a newline and a colon, and n-grams with non-ASCII bytes, round-trip
  // thanks to the length prefixes.
  Column column = MakeColumn({"caf\xC3\xA9 au lait", "caf\xC3\xA9 noir", "th\xC3\xA9 vert"},
                             ColumnType::kText, "odd\nname: x");
  NgramOptions options = Options(1, 2, 5);
  options.lowercase = false;
  NgramVectorizer vectorizer;
  vectorizer.Fit(column, options, 1);
  const std::string saved = vectorizer.Save();
  EXPECT_EQ(saved.rfind("tabforge-ngram v1\n", 0), 0u);
  NgramVectorizer loaded = NgramVectorizer::Load(saved);
  EXPECT_EQ(loaded.Save(), saved);
  EXPECT_EQ(loaded.vocabulary(), vectorizer.vocabulary());
  EXPECT_EQ(loaded.column_name(), "odd\nname: x");
  EXPECT_EQ(loaded.options().max_features, 5);
  EXPECT_FALSE(loaded.options().lowercase);
  ExpectSameCounts(loaded.Transform(column, 2), vectorizer.Transform(column, 1));

  // An unfitted vectorizer round-trips too.
  EXPECT_EQ(NgramVectorizer::Load(NgramVectorizer().Save()).Save(), NgramVectorizer().Save());
}

TEST(NgramVectorizer, LoadRejectsCorruptedInput) {
  NgramVectorizer vectorizer;
  vectorizer.Fit(MakeColumn({"red apple", "green apple"}), Options(1, 2), 1);
  const std::string saved = vectorizer.Save();
  // Every strict prefix is truncated.
  for (std::size_t length = 0; length < saved.size(); ++length) {
    EXPECT_THROW(NgramVectorizer::Load(saved.substr(0, length)), InvalidInput) << length;
  }
  EXPECT_THROW(NgramVectorizer::Load(saved + "x"), InvalidInput);
  std::string other_version = saved;
  other_version.replace(0, 17, "tabforge-ngram v2");
  try {
    NgramVectorizer::Load(other_version);
    ADD_FAILURE() << "another version was accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("corrupted or from another version"),
              std::string::npos);
  }
  // Out of order vocabulary: swap "apple" (first) for "zzzzz".
  std::string unordered = saved;
  unordered.replace(unordered.find("5:apple\n"), 8, "5:zzzzz\n");
  EXPECT_THROW(NgramVectorizer::Load(unordered), InvalidInput);
  // A length that runs past the end.
  std::string long_length = saved;
  long_length.replace(long_length.find("5:apple\n"), 2, "9:");
  EXPECT_THROW(NgramVectorizer::Load(long_length), InvalidInput);
}

TEST(NgramVectorizer, ThreadCountDoesNotChangeResult) {
  std::mt19937 random(7);
  const std::vector<std::string> words = {"good", "bad", "movie", "plot", "actor", "scene",
                                          "very", "not", "great", "dull", "long",  "short",
                                          "fun",  "sad", "story", "end",  "music", "cast"};
  std::string csv = "id,t\n";
  for (int row = 0; row < 4000; ++row) {
    csv += std::to_string(row) + ",";
    if (random() % 20 != 0) {  // 1 row in 20 missing
      const int length = 3 + static_cast<int>(random() % 12);
      for (int word = 0; word < length; ++word) {
        if (word > 0) csv += random() % 5 == 0 ? ". " : " ";
        csv += words[random() % words.size()];
      }
      if (row % 7 == 0) csv += " Good Movie";  // repeated values and mixed case
    }
    csv += "\n";
  }
  Column column = ParseTextColumn(csv);
  ASSERT_EQ(column.size(), 4000);
  NgramVectorizer one;
  NgramVectorizer four;
  one.Fit(column, Options(5, 3, 300), 1);
  four.Fit(column, Options(5, 3, 300), 4);
  EXPECT_EQ(one.num_features(), 300);
  EXPECT_EQ(one.vocabulary(), four.vocabulary());
  EXPECT_EQ(one.Save(), four.Save());
  SparseCounts counts = one.Transform(column, 1);
  ExpectSameCounts(counts, four.Transform(column, 4));
  ExpectSameCounts(counts, one.Transform(column, 3));
  for (std::int64_t row = 0; row < column.size(); ++row) {
    for (std::int64_t at = counts.row_offsets[row] + 1; at < counts.row_offsets[row + 1]; ++at) {
      EXPECT_LT(counts.columns[at - 1], counts.columns[at]);
    }
  }

  // kText and kCategorical storage give the same features.
  Column other_type = column;
  other_type.SetStringType(column.type() == ColumnType::kText ? ColumnType::kCategorical
                                                              : ColumnType::kText);
  ExpectSameCounts(counts, one.Transform(other_type, 2));
  std::vector<float> special_one(kNumSpecialFeatures * column.size());
  std::vector<float> special_four(special_one.size());
  ComputeSpecialFeatures(column, special_one.data(), 1);
  ComputeSpecialFeatures(other_type, special_four.data(), 4);
  for (std::size_t index = 0; index < special_one.size(); ++index) {
    const bool both_nan = std::isnan(special_one[index]) && std::isnan(special_four[index]);
    EXPECT_TRUE(both_nan || special_one[index] == special_four[index]) << index;
  }
}

}  // namespace
}  // namespace tabforge::features
