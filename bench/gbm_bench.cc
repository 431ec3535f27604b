// GBM benchmark on a train/test pair of CSV files.
//   gbm_bench --train FILE --test FILE --label COL [--params JSON] [--threads N]
//             [--valid-fraction F]
// Fits the feature pipeline on train, trains the GBM (early stopping on a held-out fraction of
// train when --valid-fraction is set and the params enable early_stopping_round) and prints
// one JSON line: dataset, rows, params, threads, device, the test metrics under their
// src/metrics names, bin/train/predict seconds, rounds and peak RSS.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
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

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string train_path = ArgValue(argc, argv, "--train", "");
    const std::string test_path = ArgValue(argc, argv, "--test", "");
    const std::string label = ArgValue(argc, argv, "--label", "");
    if (train_path.empty() || test_path.empty() || label.empty()) {
      std::fprintf(stderr,
                   "usage: gbm_bench --train FILE --test FILE --label COL [--params JSON] "
                   "[--threads N] [--valid-fraction F]\n");
      return 2;
    }
    const std::string params_json = ArgValue(argc, argv, "--params", "{}");
    const int threads = std::stoi(ArgValue(argc, argv, "--threads", "0"));
    const double valid_fraction = std::stod(ArgValue(argc, argv, "--valid-fraction", "0"));

    data::Table train_table = data::ReadCsv(train_path);
    data::Table test_table = data::ReadCsv(test_path);
    data::LabelSummary summary = data::AnalyzeLabel(train_table, label);
    features::FeaturePipeline pipeline = features::FeaturePipeline::Fit(train_table, label);
    features::FeatureMatrix all = pipeline.Transform(train_table, threads);
    features::FeatureMatrix test = pipeline.Transform(test_table, threads);
    std::vector<double> all_labels = Labels(train_table, summary);
    std::vector<double> test_labels = Labels(test_table, summary);

    gbm::GbmParams params = gbm::GbmParams::FromJson(params_json);
    const int classes = static_cast<int>(summary.classes.size());
    if (summary.problem_type != ProblemType::kRegression) {
      params.objective = classes == 2 ? "binary" : "multiclass";
    } else if (!gbm::IsRegressionObjective(params.objective)) {
      params.objective = "regression";
    }
    params.num_class = std::max(classes, 1);
    params.Validate();

    std::vector<std::int64_t> fit_rows, valid_rows;
    for (std::int64_t row = 0; row < all.num_rows; ++row) {
      const bool held_out =
          valid_fraction > 0 && RandomUniform(params.seed, 0x76616c, row) < valid_fraction;
      (held_out ? valid_rows : fit_rows).push_back(row);
    }
    features::FeatureMatrix fit = features::SelectRows(all, fit_rows);
    features::FeatureMatrix valid = features::SelectRows(all, valid_rows);
    std::vector<double> fit_labels, valid_labels;
    for (std::int64_t row : fit_rows) fit_labels.push_back(all_labels[row]);
    for (std::int64_t row : valid_rows) valid_labels.push_back(all_labels[row]);

    gbm::GbmModel model = gbm::GbmModel::Fit(
        fit, fit_labels, {}, valid_rows.empty() ? nullptr : &valid, valid_labels, params, threads);
    Stopwatch predict_watch;
    std::vector<double> predictions = model.Predict(test, threads);
    const double predict_seconds = predict_watch.Seconds();
    const metrics::Predictions scored{
        predictions, summary.problem_type == ProblemType::kRegression ? 1 : std::max(classes, 2)};
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
    fmt::print(
        "{{\"dataset\":\"{}\",\"rows\":{},\"params\":{},\"threads\":{},\"device\":\"cpu\"{},"
        "\"bin_seconds\":{:.4f},\"train_seconds\":{:.4f},\"predict_seconds\":{:.4f},"
        "\"rounds\":{},\"stop_reason\":\"{}\",\"peak_rss_bytes\":{}}}\n",
        train_path, fit.num_rows, params_json, threads, metric_json, model.report().bin_seconds,
        model.report().train_seconds, predict_seconds, model.report().iterations,
        model.report().stop_reason, static_cast<long long>(usage.ru_maxrss) * 1024);
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "gbm_bench: %s\n", error.what());
    return 1;
  }
}
