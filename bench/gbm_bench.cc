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

#include "bench_problem.h"
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

using namespace tabforge;
using namespace tabforge::bench;

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

    Problem problem = ProblemFromArgs(argc, argv, threads);
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
        "\"device_batches\":{},\"device_histogram_bytes\":{},\"device_unused_split_rows\":{},"
        "\"rounds\":{},\"stop_reason\":\"{}\","
        "\"peak_rss_bytes\":{},\"raw_"
        "data_bytes\":{},"
        "\"raw_label_bytes\":{},\"bin_matrix_bytes\":{},\"memory_bar_bytes\":{},"
        "\"model_bytes\":{},\"model_sha256\":\"{}\"}}\n",
        problem.dataset, fit.num_rows, params_json, threads, model.report().device,
        model.report().device_note, metric_json, model.report().bin_seconds,
        model.report().upload_seconds, model.report().train_seconds, predict_seconds,
        model.report().device_batches, model.report().device_histogram_bytes,
        model.report().device_unused_split_rows, model.report().iterations,
        model.report().stop_reason, static_cast<long long>(usage.ru_maxrss) * 1024,
        raw_feature_bytes, raw_label_bytes, model.report().bin_matrix_bytes, memory_bar_bytes,
        model_bytes.size(), Sha256Hex(model_bytes));
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "gbm_bench: %s\n", error.what());
    return 1;
  }
}
