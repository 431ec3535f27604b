#include "models/tree/binning.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"

namespace tabforge::tree {
namespace {

features::FeatureMatrix NumericMatrix(const std::vector<std::vector<float>>& columns) {
  features::FeatureMatrix matrix;
  matrix.num_rows = static_cast<std::int64_t>(columns.front().size());
  for (std::size_t index = 0; index < columns.size(); ++index) {
    matrix.numeric.insert(matrix.numeric.end(), columns[index].begin(), columns[index].end());
    matrix.numeric_info.push_back({fmt::format("f{}", index), "f", 0, {}});
  }
  return matrix;
}

TEST(Binning, FewDistinctValuesGetOneBinEachAtMidpoints) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Values 1 (x3), 2 (x4), 4 (x3) and two missing: bounds at 1.5 and 3, then +inf; the
  // missing bin is the fourth bin.
  features::FeatureMatrix matrix = NumericMatrix({{1, 1, 1, 2, 2, 2, 2, 4, 4, 4, nan, nan}});
  BinMapper mapper = BinMapper::Fit(matrix, BinningOptions{});
  const FeatureBins& bins = mapper.feature(0);
  ASSERT_EQ(bins.upper_bounds.size(), 3u);
  EXPECT_DOUBLE_EQ(bins.upper_bounds[0], 1.5);
  EXPECT_DOUBLE_EQ(bins.upper_bounds[1], 3.0);
  EXPECT_TRUE(std::isinf(bins.upper_bounds[2]));
  EXPECT_EQ(bins.num_bins, 4);
  EXPECT_EQ(bins.NumericBin(1.5f), 0);  // a value equal to a bound goes to the lower bin
  EXPECT_EQ(bins.NumericBin(1.6f), 1);
  EXPECT_EQ(bins.NumericBin(100.0f), 2);  // beyond the training range: the last value bin
  EXPECT_EQ(bins.NumericBin(-5.0f), 0);
  EXPECT_EQ(bins.NumericBin(nan), 3);
  BinMatrix binned = ApplyBins(mapper, matrix);
  EXPECT_FALSE(binned.wide());
  EXPECT_EQ(binned.Bin(0, 0), 0);
  EXPECT_EQ(binned.Bin(0, 3), 1);
  EXPECT_EQ(binned.Bin(0, 9), 2);
  EXPECT_EQ(binned.Bin(0, 11), 3);
}

TEST(Binning, MinDataInBinMergesSparseValues) {
  // Ten distinct values seen once each, min_data_in_bin 3: bins close after every third value.
  std::vector<float> values;
  for (int value = 0; value < 10; ++value) values.push_back(float(value));
  BinMapper mapper = BinMapper::Fit(NumericMatrix({values}), BinningOptions{});
  const FeatureBins& bins = mapper.feature(0);
  EXPECT_EQ(bins.upper_bounds,
            (std::vector<double>{2.5, 5.5, 8.5, std::numeric_limits<double>::infinity()}));
}

// A long column (sorted by bits, not by comparisons) of both signs, both zeros, infinities and
// powers of two far apart, each distinct value 5 times in a shuffled order: every distinct value
// gets its own bin, with bounds at the midpoints, in the values' order.
TEST(Binning, LongColumnsOfMixedSignsBinInValueOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> distinct = {-inf,  -3e38f, -1e10f, -7.5f, -1.0f, -1e-30f, 1e-30f,
                                 0.25f, 1.0f,   3.0f,   1e10f, 3e38f, inf};
  for (int step = 1; step <= 200; ++step) distinct.push_back(1000.0f + float(step) * 0.5f);
  std::vector<float> column;
  for (float value : distinct) column.insert(column.end(), 5, value);
  column.insert(column.end(), 5, -0.0f);
  column.insert(column.end(), 5, 0.0f);  // equal to -0: one bin of 10
  std::mt19937 shuffle(7);
  for (int repeat = 0; repeat < 10; ++repeat) {
    std::shuffle(column.begin(), column.end(), shuffle);
    const std::size_t before = column.size();
    column.insert(column.end(), column.begin(), column.begin() + std::ptrdiff_t(before));
    if (column.size() >= 4096 * 2) break;
  }
  ASSERT_GE(column.size(), 4096u * 2);
  distinct.push_back(0.0f);
  std::sort(distinct.begin(), distinct.end());
  BinningOptions options;
  options.max_bin = 1023;
  BinMapper mapper = BinMapper::Fit(NumericMatrix({column}), options);
  const FeatureBins& bins = mapper.feature(0);
  ASSERT_EQ(bins.upper_bounds.size(), distinct.size());
  for (std::size_t at = 0; at + 1 < distinct.size(); ++at) {
    EXPECT_EQ(bins.upper_bounds[at], (double(distinct[at]) + double(distinct[at + 1])) / 2) << at;
    EXPECT_EQ(bins.NumericBin(distinct[at]), static_cast<int>(at)) << distinct[at];
  }
  EXPECT_EQ(bins.NumericBin(-0.0f), bins.NumericBin(0.0f));
}

// Long columns are binned through a table of key ranges (ApplyBins from 2^18 rows): every value,
// those equal to a bound, next to one, both zeros, denormals, infinities and missing ones among
// them, gets NumericBin's bin.
TEST(Binning, LongColumnsGetTheSearchedBins) {
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> fit_values;
  for (int at = 0; at < 20000; ++at) fit_values.push_back(normal(random) * normal(random));
  BinningOptions options;
  options.max_bin = 255;
  const BinMapper mapper = BinMapper::Fit(NumericMatrix({fit_values}), options);
  const FeatureBins& bins = mapper.feature(0);
  std::vector<float> column;
  for (double bound : bins.upper_bounds) {
    if (std::isinf(bound)) continue;
    const auto near = static_cast<float>(bound);
    column.insert(column.end(),
                  {near, std::nextafter(near, -INFINITY), std::nextafter(near, INFINITY)});
  }
  const float edges[] = {0.0f,
                         -0.0f,
                         1e-45f,
                         -1e-45f,
                         1e-38f,
                         -1e-38f,
                         INFINITY,
                         -INFINITY,
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::lowest(),
                         std::numeric_limits<float>::quiet_NaN()};
  column.insert(column.end(), std::begin(edges), std::end(edges));
  std::uniform_real_distribution<float> wide(-1e6f, 1e6f);
  while (column.size() < (1u << 18) + 1000) {
    column.push_back(column.size() % 3 == 0 ? wide(random) : normal(random) * normal(random));
  }
  const BinMatrix binned = ApplyBins(mapper, NumericMatrix({column}), 2);
  int mismatches = 0;
  for (std::size_t row = 0; row < column.size(); ++row) {
    if (binned.Bin(0, static_cast<std::int64_t>(row)) != bins.NumericBin(column[row])) {
      ++mismatches;
      ADD_FAILURE() << "row " << row << " value " << column[row];
      if (mismatches > 5) break;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Binning, ManyValuesGiveNearlyEqualCountQuantileBins) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  std::vector<float> values(100000);
  for (float& value : values) value = normal(random);
  BinningOptions options;
  options.max_bin = 64;
  features::FeatureMatrix matrix = NumericMatrix({values});
  BinMapper mapper = BinMapper::Fit(matrix, options);
  const FeatureBins& bins = mapper.feature(0);
  EXPECT_EQ(bins.num_bins, 64);  // 63 value bins + missing
  BinMatrix binned = ApplyBins(mapper, matrix);
  std::vector<int> counts(64, 0);
  for (std::int64_t row = 0; row < matrix.num_rows; ++row) ++counts[binned.Bin(0, row)];
  EXPECT_EQ(counts[63], 0);
  // Equal-count target: 100000 / 63 = 1587 rows per bin.
  for (int bin = 0; bin < 63; ++bin) {
    EXPECT_NEAR(counts[bin], 1587, 30) << "bin " << bin;
  }
}

TEST(Binning, HeavyValueGetsItsOwnBin) {
  // Half the rows are 0 (as in sparse counts): 0 must not share a bin with other values.
  std::vector<float> values;
  for (int row = 0; row < 20000; ++row) values.push_back(row % 2 == 0 ? 0.0f : float(row));
  BinMapper mapper = BinMapper::Fit(NumericMatrix({values}), BinningOptions{});
  const FeatureBins& bins = mapper.feature(0);
  EXPECT_EQ(bins.NumericBin(0.0f), 0);
  EXPECT_EQ(bins.NumericBin(1.0f), 1);
  EXPECT_LE(bins.num_bins, 255);
}

TEST(Binning, CategoricalMostFrequentFirstRestTogether) {
  features::FeatureMatrix matrix;
  matrix.num_rows = 10;
  // Code 2 five times, code 0 three times, codes 1 and 3 once; cardinality 6 (4 and 5 unseen).
  matrix.categorical = {2, 2, 0, 2, 0, 1, 2, 0, 3, 2};
  matrix.categorical_info.push_back({"c", "c", 6, {}});
  BinningOptions options;
  options.max_cat_bins = 3;  // two own bins (codes 2 and 0) and the shared one
  BinMapper mapper = BinMapper::Fit(matrix, options);
  const FeatureBins& bins = mapper.feature(0);
  EXPECT_TRUE(bins.categorical);
  EXPECT_EQ(bins.num_bins, 3);
  EXPECT_EQ(bins.CategoryBin(2), 0);
  EXPECT_EQ(bins.CategoryBin(0), 1);
  EXPECT_EQ(bins.CategoryBin(1), 2);
  EXPECT_EQ(bins.CategoryBin(3), 2);
  EXPECT_EQ(bins.CategoryBin(5), 2);   // unseen at fit
  EXPECT_EQ(bins.CategoryBin(99), 2);  // beyond the cardinality
}

TEST(Binning, CategoriesSortedKeepTheFrequentOnesInSortedOrder) {
  features::FeatureMatrix matrix;
  matrix.num_rows = 10;
  // Same rows as above; sorted ranks put code 3 first, then 0, 2, 1.
  matrix.categorical = {2, 2, 0, 2, 0, 1, 2, 0, 3, 2};
  matrix.categorical_info.push_back({"c", "c", 6, {1, 3, 2, 0, 4, 5}});
  BinningOptions options;
  options.max_cat_bins = 3;  // own bins for the two most frequent codes, 2 and 0
  options.categories_sorted = true;
  const FeatureBins bins = BinMapper::Fit(matrix, options).feature(0);
  EXPECT_EQ(bins.num_bins, 3);
  EXPECT_EQ(bins.CategoryBin(0), 0);  // rank 1 before code 2's rank 2, though less frequent
  EXPECT_EQ(bins.CategoryBin(2), 1);
  EXPECT_EQ(bins.CategoryBin(3), 2);  // rank 0 but rare: the shared bin, last
  EXPECT_EQ(bins.CategoryBin(1), 2);
}

TEST(Binning, WideStorageAboveTwoHundredFiftySixBins) {
  std::vector<float> values;
  for (int row = 0; row < 5000; ++row) values.push_back(float(row));
  BinningOptions options;
  options.max_bin = 1000;
  options.min_data_in_bin = 1;
  features::FeatureMatrix matrix = NumericMatrix({values});
  BinMapper mapper = BinMapper::Fit(matrix, options);
  EXPECT_EQ(mapper.feature(0).num_bins, 1000);
  BinMatrix binned = ApplyBins(mapper, matrix);
  EXPECT_TRUE(binned.wide());
  EXPECT_EQ(binned.Bin(0, 4999), 998);  // the last value bin
}

TEST(Binning, SampledBoundariesDoNotDependOnThreads) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(0, 1000);
  std::vector<float> a(300000), b(300000);
  for (std::size_t row = 0; row < a.size(); ++row) {
    a[row] = uniform(random);
    b[row] = std::floor(uniform(random) / 10);
  }
  features::FeatureMatrix matrix = NumericMatrix({a, b});
  BinningOptions options;
  options.sample_rows = 50000;
  BinMapper one = BinMapper::Fit(matrix, options, 1);
  BinMapper two = BinMapper::Fit(matrix, options, 2);
  for (int feature = 0; feature < 2; ++feature) {
    EXPECT_EQ(one.feature(feature).upper_bounds, two.feature(feature).upper_bounds);
  }
  EXPECT_EQ(ApplyBins(one, matrix, 1).bins8, ApplyBins(two, matrix, 2).bins8);
  options.seed = 1;  // another sample gives (slightly) other boundaries
  EXPECT_NE(BinMapper::Fit(matrix, options, 1).feature(0).upper_bounds,
            one.feature(0).upper_bounds);
}

TEST(Binning, InvalidOptionsAreNamed) {
  BinningOptions options;
  options.max_bin = 1;
  try {
    options.Validate();
    FAIL();
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("max_bin = 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace tabforge::tree
