// Features of free-text columns, as AutoGluon's TextSpecialFeatureGenerator and
// TextNgramFeatureGenerator make them:
//   special features  counts and ratios of one string (characters, words, capitals, digits...)
//   word n-grams      counts of the vocabulary's 1..3-grams per row, as scikit-learn's
//                     CountVectorizer(min_df=30, ngram_range=(1, 3), max_features=10000)
// Both accept kText and kCategorical columns alike (both are dictionary-encoded) and work once
// per distinct dictionary entry, then gather per row: text values often repeat.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/column.h"
#include "features/feature_matrix.h"

namespace tabforge::features {

// ---------------------------------------------------------------------------------------------
// Special features

// The number of special features per text column.
inline constexpr int kNumSpecialFeatures = 9;

// The special features of one string. "Characters" are UTF-8 code points (the input is valid
// UTF-8, as the CSV reader guarantees); the letter, digit, symbol and space classes are ASCII
// only, so a non-ASCII character counts as a character but in no class. Every ratio divides by
// char_count and is 0 for the empty string.
struct TextSpecialFeatures {
  float char_count = 0;     // code points
  float word_count = 0;     // runs of non-whitespace (space, \t, \n, \r, \f, \v)
  float capital_ratio = 0;  // ASCII 'A'-'Z' / characters
  float lower_ratio = 0;    // ASCII 'a'-'z' / characters
  float digit_count = 0;    // ASCII '0'-'9'
  float digit_ratio = 0;    // digits / characters
  float symbol_count = 0;   // ASCII punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
  float symbol_ratio = 0;   // symbols / characters
  float space_ratio = 0;    // ASCII whitespace (as in word_count) / characters

  // The values in the order of SpecialFeatureNames.
  std::array<float, kNumSpecialFeatures> Values() const;
};

// The special features of `text`.
TextSpecialFeatures ComputeSpecialFeatures(std::string_view text);

// The output names for column `column`, in the order of TextSpecialFeatures' fields:
// "<column>.char_count", ".word_count", ".capital_ratio", ".lower_ratio", ".digit_count",
// ".digit_ratio", ".symbol_count", ".symbol_ratio", ".space_ratio".
std::vector<std::string> SpecialFeatureNames(const std::string& column);

// Fills the special features of every row of `column` (kText or kCategorical; InvalidInput
// otherwise) into `out`, which the caller allocates with kNumSpecialFeatures * column.size()
// floats, feature-major: feature f of row r is out[f * column.size() + r]. A missing row gets
// NaN in every feature. `threads` <= 0 means all hardware threads; the output does not depend
// on it.
void ComputeSpecialFeatures(const data::Column& column, float* out, int threads);

// ---------------------------------------------------------------------------------------------
// Word n-grams

struct NgramOptions {
  // Keep only n-grams that occur in at least this many rows (scikit-learn's integer min_df;
  // AutoGluon: 30). At least 1.
  int min_df = 30;
  // Shortest and longest n-gram, in tokens: 1 <= min_n <= max_n (ngram_range=(1, 3)).
  int min_n = 1;
  int max_n = 3;
  // Keep at most this many n-grams, those with the highest total count over all rows
  // (AutoGluon: 10000). 0 means no limit.
  int max_features = 10000;
  // Lower-case ASCII letters before tokenizing (non-ASCII letters are left as they are).
  bool lowercase = true;
};

// The tokens of `text` in order, as scikit-learn's default token_pattern (?u)\b\w\w+\b finds
// them: maximal runs of word characters that hold at least two characters (code points).
// Word characters are ASCII letters, digits and '_' and every non-ASCII character (any byte
// >= 0x80); Python's Unicode \w differs there only for non-ASCII punctuation, symbols and
// spaces, which this treats as parts of words. Views point into `text`.
std::vector<std::string_view> Tokenize(std::string_view text);

// Hashes std::string keys and std::string_view lookups alike, so maps keyed by std::string
// can be searched without building a string (with std::equal_to<>).
struct StringViewHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

// Learns a vocabulary of word n-grams and counts them per row into a sparse block.
// An n-gram is min_n..max_n consecutive tokens of one value joined by single spaces.
class NgramVectorizer {
 public:
  NgramVectorizer() = default;

  // Learns the vocabulary from `column` (kText or kCategorical; InvalidInput otherwise):
  //  1. the document frequency (rows holding it) and total count of every n-gram; missing
  //     rows contribute nothing;
  //  2. keeps the n-grams with document frequency >= options.min_df;
  //  3. of those, keeps the options.max_features with the highest total count; ties go to
  //     the lexicographically (bytewise) smaller n-gram, a deterministic rule where
  //     scikit-learn's order is unspecified;
  //  4. sorts the kept n-grams bytewise (code-point order, as scikit-learn sorts) and gives
  //     n-gram i output column i.
  // The vocabulary may end up empty (num_features() == 0). Throws InvalidInput naming the
  // option when `options` is out of range. `threads` <= 0 means all hardware threads; the
  // result does not depend on it. Replaces any earlier fit.
  void Fit(const data::Column& column, const NgramOptions& options, int threads);

  // The counts of the vocabulary's n-grams in every row of `column` (kText or kCategorical;
  // InvalidInput otherwise): num_columns = num_features(), one CSR row per row, columns
  // ascending, counts saturated at 65535. n-grams not in the vocabulary are ignored; missing
  // rows are empty. info[i] names column i "<fitted column>.__ngram__.<n-gram>" with the fitted
  // column's name as source. `threads` <= 0 means all; the output does not depend on it.
  SparseCounts Transform(const data::Column& column, int threads) const;

  // The fitted state as bytes: the text line "tabforge-ngram v1", then the column name, the
  // options and the vocabulary, each string length-prefixed so any bytes round-trip.
  // Save(Load(bytes)) == bytes.
  std::string Save() const;
  // The vectorizer saved in `bytes`. Throws InvalidInput saying the n-gram model is corrupted
  // or from another version when the header, a field or the length does not match.
  static NgramVectorizer Load(std::string_view bytes);

  int num_features() const { return static_cast<int>(vocabulary_.size()); }
  // The n-grams in output column order (bytewise ascending).
  const std::vector<std::string>& vocabulary() const { return vocabulary_; }
  // The options and column name of the last Fit (defaults before any).
  const NgramOptions& options() const { return options_; }
  const std::string& column_name() const { return column_name_; }

 private:
  void BuildIndex();

  NgramOptions options_;
  std::string column_name_;
  std::vector<std::string> vocabulary_;
  // vocabulary_[i] -> i, looked up by string_view.
  std::unordered_map<std::string, std::int32_t, StringViewHash, std::equal_to<>> index_;
};

}  // namespace tabforge::features
