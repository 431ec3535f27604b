// GBM benchmark on a train/test pair of CSV files, one CSV file split at random, or generated
// data.
//   gbm_bench --train FILE --test FILE --label COL [--params JSON] [--threads N]
//             [--valid-fraction F] [--device cpu|cuda]
//   gbm_bench --data FILE --label COL [--test-fraction F] [--split-seed S] ...
//             (row r is a test row when RandomUniform(S, "test" stream, r) < F; default 0.2, 0)
//   gbm_bench --synthetic ROWS,FEATURES,SEED [--write-data DIR] [--params JSON] ...
// The synthetic problem is HIGGS-like: dense standard-normal features and a binary label from
// a nonlinear function of the first 14 plus noise (test ROC AUC about 0.8), ROWS training rows
// and ROWS/4 test rows; --write-data also writes DIR/train.csv and DIR/test.csv (label "label")
// so peers train on exactly the same rows.
// Fits the feature pipeline on train, trains the GBM (early stopping on a held-out fraction of
// train when --valid-fraction is set and the params enable early_stopping_round) and prints
// one JSON line: dataset, rows, params, threads, device, the test metrics under their
// src/metrics names, bin/train/predict seconds, rounds, peak RSS (beside the bytes of the raw
// feature matrices and of the bin matrix) and the saved model's size and SHA-256.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/serialize.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "features/pipeline.h"
#include "metrics/metric.h"
#include "models/gbm/gbm.h"

namespace {

using namespace tabforge;

std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int index = 1; index + 1 < argc; ++index) {
    if (argv[index] == name) return argv[index + 1];
  }
  return fallback;
}

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

struct Problem {
  std::string dataset;
  features::FeatureMatrix all;  // training rows (before any validation split)
  features::FeatureMatrix test;
  std::vector<double> all_labels;
  std::vector<double> test_labels;
  ProblemType type = ProblemType::kBinary;
  int classes = 2;
};

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

// Rows [first, first + rows) of the synthetic problem: features from counter-based normals
// (Box-Muller), so any row can be made on its own.
void MakeSyntheticRows(std::int64_t first, std::int64_t rows, int feature_count, std::uint64_t seed,
                       features::FeatureMatrix& out, std::vector<double>& labels) {
  out.num_rows = rows;
  out.numeric.assign(static_cast<std::size_t>(rows) * feature_count, 0.0f);
  out.numeric_info.clear();
  for (int feature = 0; feature < feature_count; ++feature) {
    out.numeric_info.push_back({fmt::format("f{}", feature), fmt::format("f{}", feature), 0});
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

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string train_path = ArgValue(argc, argv, "--train", "");
    const std::string test_path = ArgValue(argc, argv, "--test", "");
    const std::string label = ArgValue(argc, argv, "--label", "");
    const std::string data_path = ArgValue(argc, argv, "--data", "");
    const std::string synthetic = ArgValue(argc, argv, "--synthetic", "");
    const bool pair_given = !train_path.empty() && !test_path.empty() && !label.empty();
    const bool split_given = !data_path.empty() && !label.empty();
    if (synthetic.empty() && !pair_given && !split_given) {
      std::fprintf(stderr,
                   "usage: gbm_bench (--train FILE --test FILE --label COL | --data FILE --label "
                   "COL [--test-fraction F] [--split-seed S] | --synthetic ROWS,FEATURES,SEED "
                   "[--write-data DIR]) [--params JSON] [--threads N] [--valid-fraction F] "
                   "[--device cpu|cuda]\n");
      return 2;
    }
    const std::string device = ArgValue(argc, argv, "--device", "cpu");
    if (device != "cpu" && device != "cuda") {
      throw InvalidInput(fmt::format("--device {}: the valid values are cpu and cuda", device));
    }
    const std::string params_json = ArgValue(argc, argv, "--params", "{}");
    const int threads = std::stoi(ArgValue(argc, argv, "--threads", "0"));
    const double valid_fraction = std::stod(ArgValue(argc, argv, "--valid-fraction", "0"));

    Problem problem =
        !synthetic.empty() ? MakeSyntheticProblem(synthetic)
        : split_given
            ? LoadSplitProblem(data_path, label,
                               std::stod(ArgValue(argc, argv, "--test-fraction", "0.2")),
                               std::stoull(ArgValue(argc, argv, "--split-seed", "0")), threads)
            : LoadCsvProblem(train_path, test_path, label, threads);
    if (const std::string dir = ArgValue(argc, argv, "--write-data", ""); !dir.empty()) {
      WriteCsv(dir + "/train.csv", problem.all, problem.all_labels);
      WriteCsv(dir + "/test.csv", problem.test, problem.test_labels);
    }
    const features::FeatureMatrix& all = problem.all;
    const features::FeatureMatrix& test = problem.test;
    const std::vector<double>& all_labels = problem.all_labels;
    const std::vector<double>& test_labels = problem.test_labels;
    gbm::GbmParams params = gbm::GbmParams::FromJson(params_json);
    const int classes = problem.classes;
    if (problem.type != ProblemType::kRegression) {
      params.objective = classes == 2 ? "binary" : "multiclass";
    } else if (!gbm::IsRegressionObjective(params.objective)) {
      params.objective = "regression";
    }
    params.num_class = std::max(classes, 1);
    params.device = device;
    params.Validate();

    // Row lists only with a validation split, so the benchmark holds nothing per row beside
    // the data and the trainer's own buffers.
    std::vector<std::int64_t> fit_rows, valid_rows;
    for (std::int64_t row = 0; valid_fraction > 0 && row < all.num_rows; ++row) {
      const bool held_out = RandomUniform(params.seed, 0x76616c, row) < valid_fraction;
      (held_out ? valid_rows : fit_rows).push_back(row);
    }
    // Without a validation split the training rows are used as they are (no copy).
    features::FeatureMatrix held_fit, valid;
    if (!valid_rows.empty()) {
      held_fit = features::SelectRows(all, fit_rows);
      valid = features::SelectRows(all, valid_rows);
    }
    const features::FeatureMatrix& fit = valid_rows.empty() ? all : held_fit;
    std::vector<double> fit_labels, valid_labels;
    if (!valid_rows.empty())
      for (std::int64_t row : fit_rows) fit_labels.push_back(all_labels[row]);
    for (std::int64_t row : valid_rows) valid_labels.push_back(all_labels[row]);

    gbm::GbmModel model =
        gbm::GbmModel::Fit(fit, valid_rows.empty() ? all_labels : fit_labels, {},
                           valid_rows.empty() ? nullptr : &valid, valid_labels, params, threads);
    const std::string model_bytes = model.Serialize();
    Stopwatch predict_watch;
    std::vector<double> predictions = model.Predict(test, threads);
    const double predict_seconds = predict_watch.Seconds();
    const metrics::Predictions scored{
        predictions, problem.type == ProblemType::kRegression ? 1 : std::max(classes, 2)};
    std::string metric_json;
    auto add = [&](const char* name) {
      metric_json += fmt::format(",\"{}\":{:.6f}", name, metrics::Score(name, test_labels, scored));
    };
    if (params.objective == "binary") {
      add("roc_auc");
      add("accuracy");
      add("log_loss");
    } else if (params.objective == "multiclass") {
      add("accuracy");
      add("log_loss");
    } else {
      add("root_mean_squared_error");
      add("r2");
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    // The memory bar: 1.5 x (bin matrix + 4 float vectors of the training rows) plus the raw
    // data held (feature matrices and label vectors of train and test, as loaded).
    const std::int64_t raw_feature_bytes = MatrixBytes(all) + MatrixBytes(test);
    const std::int64_t raw_label_bytes =
        static_cast<std::int64_t>((all_labels.size() + test_labels.size()) * sizeof(double));
    const std::int64_t memory_bar_bytes =
        (3 * (model.report().bin_matrix_bytes + 16 * fit.num_rows)) / 2 + raw_feature_bytes +
        raw_label_bytes;
    fmt::print(
        "{{\"dataset\":\"{}\",\"rows\":{},\"params\":{},\"threads\":{},\"device\":\"{}\","
        "\"device_note\":\"{}\"{},\"bin_seconds\":{:.4f},\"upload_seconds\":{:.4f},"
        "\"train_seconds\":{:.4f},\"predict_seconds\":{:.4f},"
        "\"rounds\":{},\"stop_reason\":\"{}\",\"peak_rss_bytes\":{},\"raw_data_bytes\":{},"
        "\"raw_label_bytes\":{},\"bin_matrix_bytes\":{},\"memory_bar_bytes\":{},"
        "\"model_bytes\":{},\"model_sha256\":\"{}\"}}\n",
        problem.dataset, fit.num_rows, params_json, threads, model.report().device,
        model.report().device_note, metric_json, model.report().bin_seconds,
        model.report().upload_seconds, model.report().train_seconds, predict_seconds,
        model.report().iterations, model.report().stop_reason,
        static_cast<long long>(usage.ru_maxrss) * 1024, raw_feature_bytes, raw_label_bytes,
        model.report().bin_matrix_bytes, memory_bar_bytes, model_bytes.size(),
        Sha256Hex(model_bytes));
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "gbm_bench: %s\n", error.what());
    return 1;
  }
}
