#include "bench_problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/random.h"
#include "core/serialize.h"
#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "features/pipeline.h"

namespace tabforge::bench {
namespace {

// Labels as class indices (in the summary's class order) or values.
std::vector<double> Labels(const data::Table& table, const data::LabelSummary& summary) {
  const data::Column& column = table.ColumnByName(summary.label);
  std::vector<double> labels(static_cast<std::size_t>(table.num_rows()));
  for (std::int64_t row = 0; row < table.num_rows(); ++row) {
    if (summary.problem_type == ProblemType::kRegression) {
      labels[row] = column.numeric()[row];
      continue;
    }
    const std::string text = column.CellText(row);
    auto at = std::find(summary.classes.begin(), summary.classes.end(), text);
    if (at == summary.classes.end()) {
      throw InvalidInput(
          fmt::format("label '{}' in row {} was not seen in training", text, row + 1));
    }
    labels[row] = double(at - summary.classes.begin());
  }
  return labels;
}

// The problem of a train and a test table: the pipeline is fitted on train only.
Problem ProblemFromTables(const data::Table& train_table, const data::Table& test_table,
                          const std::string& label, std::string dataset, int threads) {
  const data::LabelSummary summary = data::AnalyzeLabel(train_table, label);
  features::FeaturePipeline pipeline = features::FeaturePipeline::Fit(train_table, label);
  Problem problem;
  problem.dataset = std::move(dataset);
  problem.all = pipeline.Transform(train_table, threads);
  problem.test = pipeline.Transform(test_table, threads);
  problem.all_labels = Labels(train_table, summary);
  problem.test_labels = Labels(test_table, summary);
  problem.type = summary.problem_type;
  problem.classes = static_cast<int>(summary.classes.size());
  return problem;
}

}  // namespace

std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int index = 1; index + 1 < argc; ++index) {
    if (argv[index] == name) return argv[index + 1];
  }
  return fallback;
}

Problem LoadCsvProblem(const std::string& train_path, const std::string& test_path,
                       const std::string& label, int threads) {
  return ProblemFromTables(data::ReadCsv(train_path), data::ReadCsv(test_path), label, train_path,
                           threads);
}

constexpr std::uint64_t kTestSplitStream = 0x74657374;  // "test"

// One CSV file split into train and test rows by a counter-based draw per row (peers reproduce
// it exactly); the pipeline is fitted on the train rows only.
Problem LoadSplitProblem(const std::string& path, const std::string& label, double test_fraction,
                         std::uint64_t split_seed, int threads) {
  if (!(test_fraction > 0 && test_fraction < 1)) {
    throw InvalidInput(fmt::format("--test-fraction {}: give a fraction between 0 and 1, e.g. 0.2",
                                   test_fraction));
  }
  const data::Table table = data::ReadCsv(path);
  std::vector<std::int64_t> train_rows, test_rows;
  for (std::int64_t row = 0; row < table.num_rows(); ++row) {
    const bool test = RandomUniform(split_seed, kTestSplitStream, row) < test_fraction;
    (test ? test_rows : train_rows).push_back(row);
  }
  return ProblemFromTables(
      data::SelectRows(table, train_rows), data::SelectRows(table, test_rows), label,
      fmt::format("{} (test fraction {}, split seed {})", path, test_fraction, split_seed),
      threads);
}

std::int64_t MatrixBytes(const features::FeatureMatrix& matrix) {
  return static_cast<std::int64_t>(matrix.numeric.size() * sizeof(float) +
                                   matrix.categorical.size() * sizeof(std::int32_t));
}

namespace {

// Rows [first, first + rows) of the synthetic problem: features from counter-based normals
// (Box-Muller), so any row can be made on its own.
void MakeSyntheticRows(std::int64_t first, std::int64_t rows, int feature_count, std::uint64_t seed,
                       features::FeatureMatrix& out, std::vector<double>& labels) {
  out.num_rows = rows;
  out.numeric.assign(static_cast<std::size_t>(rows) * feature_count, 0.0f);
  out.numeric_info.clear();
  for (int feature = 0; feature < feature_count; ++feature) {
    out.numeric_info.push_back({fmt::format("f{}", feature), fmt::format("f{}", feature), 0, {}});
  }
  labels.assign(static_cast<std::size_t>(rows), 0.0);
  auto normal = [&](std::uint64_t stream, std::uint64_t counter) {
    const double u1 = RandomUniform(seed, stream, 2 * counter) + 1e-300;
    const double u2 = RandomUniform(seed, stream, 2 * counter + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
#pragma omp parallel for schedule(static)
  for (std::int64_t index = 0; index < rows; ++index) {
    const std::uint64_t row = static_cast<std::uint64_t>(first + index);
    std::vector<double> x(static_cast<std::size_t>(feature_count));
    for (int feature = 0; feature < feature_count; ++feature) {
      x[feature] = normal(feature, row);
      out.numeric[static_cast<std::size_t>(feature) * rows + index] =
          static_cast<float>(x[feature]);
    }
    auto at = [&](int feature) { return feature < feature_count ? x[feature] : 0.0; };
    double signal = at(0) * at(1) + std::sin(2 * at(2)) + 0.5 * at(3) * at(3) +
                    std::tanh(at(4) + at(5)) - 0.5 * at(6) * at(7) * at(8) - 0.5;
    for (int feature = 9; feature < 14; ++feature) signal += 0.3 * at(feature);
    labels[index] = signal + 1.6 * normal(1000, row) > 0 ? 1.0 : 0.0;
  }
}

}  // namespace

Problem MakeSyntheticProblem(const std::string& spec) {
  long long rows = 0, feature_count = 0;
  unsigned long long seed = 0;
  if (std::sscanf(spec.c_str(), "%lld,%lld,%llu", &rows, &feature_count, &seed) != 3 ||
      rows < 100 || feature_count < 1) {
    throw InvalidInput(
        fmt::format("--synthetic '{}': expected ROWS,FEATURES,SEED with ROWS >= "
                    "100, e.g. 1000000,28,0",
                    spec));
  }
  Problem problem;
  problem.dataset = fmt::format("synthetic:{}", spec);
  MakeSyntheticRows(0, rows, static_cast<int>(feature_count), seed, problem.all,
                    problem.all_labels);
  MakeSyntheticRows(rows, rows / 4, static_cast<int>(feature_count), seed, problem.test,
                    problem.test_labels);
  return problem;
}

void WriteCsv(const std::string& path, const features::FeatureMatrix& matrix,
              const std::vector<double>& labels) {
  std::string text;
  for (int feature = 0; feature < matrix.num_numeric(); ++feature) {
    text += matrix.numeric_info[feature].name + ",";
  }
  text += "label\n";
  for (std::int64_t row = 0; row < matrix.num_rows; ++row) {
    for (int feature = 0; feature < matrix.num_numeric(); ++feature) {
      fmt::format_to(std::back_inserter(text), "{},", matrix.NumericColumn(feature)[row]);
    }
    fmt::format_to(std::back_inserter(text), "{}\n", labels[row]);
  }
  WriteFileAtomically(path, text);
}

Problem ProblemFromArgs(int argc, char** argv, int threads) {
  const std::string train_path = ArgValue(argc, argv, "--train", "");
  const std::string test_path = ArgValue(argc, argv, "--test", "");
  const std::string label = ArgValue(argc, argv, "--label", "");
  const std::string data_path = ArgValue(argc, argv, "--data", "");
  const std::string synthetic = ArgValue(argc, argv, "--synthetic", "");
  if (!synthetic.empty()) return MakeSyntheticProblem(synthetic);
  if (!data_path.empty() && !label.empty()) {
    return LoadSplitProblem(data_path, label,
                            std::stod(ArgValue(argc, argv, "--test-fraction", "0.2")),
                            std::stoull(ArgValue(argc, argv, "--split-seed", "0")), threads);
  }
  if (!train_path.empty() && !test_path.empty() && !label.empty()) {
    return LoadCsvProblem(train_path, test_path, label, threads);
  }
  throw InvalidInput(
      "no data: give --train FILE --test FILE --label COL, --data FILE --label COL "
      "[--test-fraction F] [--split-seed S], or --synthetic ROWS,FEATURES,SEED");
}

}  // namespace tabforge::bench
