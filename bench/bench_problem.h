// The problems the model benchmarks train on: a train/test pair of CSV files, one CSV file
// split by a counter-based draw per row (peers reproduce it: bench_common.split_mask), or the
// HIGGS-like synthetic problem; the feature pipeline is fitted on the training rows only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "features/feature_matrix.h"

namespace tabforge::bench {

// The value of `--name VALUE` in argv, or `fallback`.
std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback);

struct Problem {
  std::string dataset;
  features::FeatureMatrix all;  // training rows (before any validation split)
  features::FeatureMatrix test;
  std::vector<double> all_labels;  // class index or target
  std::vector<double> test_labels;
  ProblemType type = ProblemType::kBinary;
  int classes = 2;  // classes of a classification problem
};

Problem LoadCsvProblem(const std::string& train_path, const std::string& test_path,
                       const std::string& label, int threads);
// Row r is a test row when RandomUniform(split_seed, "test" stream, r) < test_fraction.
Problem LoadSplitProblem(const std::string& path, const std::string& label, double test_fraction,
                         std::uint64_t split_seed, int threads);
// "ROWS,FEATURES,SEED": dense standard-normal features and a binary label from a nonlinear
// function of the first 14 plus noise (test ROC AUC about 0.8); ROWS/4 test rows.
Problem MakeSyntheticProblem(const std::string& spec);
// The problem the command line names (--train/--test/--label, --data/--label
// [--test-fraction] [--split-seed], or --synthetic); throws InvalidInput when none is given.
Problem ProblemFromArgs(int argc, char** argv, int threads);

std::int64_t MatrixBytes(const features::FeatureMatrix& matrix);
// The numeric features and the label as CSV (for peers), written atomically.
void WriteCsv(const std::string& path, const features::FeatureMatrix& matrix,
              const std::vector<double>& labels);

}  // namespace tabforge::bench
