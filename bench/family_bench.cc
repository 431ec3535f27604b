// Benchmark of one registered model family (RF, XT, KNN, LR, GBM) through the model contract,
// on the problems of bench_problem.h:
//   family_bench --family KEY [--params JSON] [--threads N] [--gpus N] [--test-rows N] (--train
//   FILE --test FILE --label COL
//                | --data FILE --label COL [--test-fraction F] [--split-seed S]
//                | --synthetic ROWS,FEATURES,SEED)
// Fits on all training rows (no validation rows), predicts the test rows and prints one JSON
// line: family, dataset, rows, params, threads, the test metrics under their src/metrics names,
// fit and predict seconds (--predict-repeats N: the test rows are predicted N times;
// predict_seconds is the first, which pays one-off set-up such as a GPU's library handles,
// predict_best_seconds the fastest), iterations, device, peak RSS, model size and SHA-256.
// With --gpus N > 0 the CUDA runtime starts while the data is read or made (as `tabforge fit`
// does), so neither fit_seconds nor predict_seconds counts the device context set-up that
// reading the data hid; cuda_wait_seconds is what was left of it when the data was ready.
// --predictions FILE writes the test rows' predictions (a line per row, its outputs
// comma-separated, with the label), for comparisons row by row with a peer's.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "bench_problem.h"
#include "core/error.h"
#include "core/serialize.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "device/cuda_device.h"
#include "metrics/metric.h"
#include "models/model.h"

using namespace tabforge;
using namespace tabforge::bench;

int main(int argc, char** argv) {
  try {
    const std::string family_key = ArgValue(argc, argv, "--family", "");
    if (family_key.empty()) {
      std::fprintf(stderr,
                   "usage: family_bench --family KEY [--params JSON] [--threads N] [--gpus N] "
                   "[--test-rows N] [--predict-repeats N] "
                   "(--train FILE --test FILE --label COL | --data FILE --label COL "
                   "[--test-fraction F] [--split-seed S] | --synthetic ROWS,FEATURES,SEED)\n");
      return 2;
    }
    const models::Family& family = models::GetFamily(family_key);
    const std::string params_json = ArgValue(argc, argv, "--params", "{}");
    const int threads = std::stoi(ArgValue(argc, argv, "--threads", "0"));
    const int gpus = std::stoi(ArgValue(argc, argv, "--gpus", "0"));
    std::optional<device::CudaWarmUp> warm_up;
    if (gpus > 0) warm_up.emplace(0);
    Problem problem = ProblemFromArgs(argc, argv, threads);
    const double cuda_wait_seconds = warm_up ? warm_up->Wait() : 0.0;
    // --test-rows N: the first N test rows only (e.g. 100k queries for KNN).
    if (const long long cap = std::stoll(ArgValue(argc, argv, "--test-rows", "0"));
        cap > 0 && cap < problem.test.num_rows) {
      std::vector<std::int64_t> rows(static_cast<std::size_t>(cap));
      for (long long row = 0; row < cap; ++row) rows[row] = row;
      problem.test = features::SelectRows(problem.test, rows);
      problem.test_labels.resize(static_cast<std::size_t>(cap));
    }
    models::Task task;
    task.problem_type = problem.type;
    task.num_classes = problem.type == ProblemType::kRegression ? 1 : problem.classes;
    task.eval_metric = problem.type == ProblemType::kRegression ? "root_mean_squared_error"
                       : problem.type == ProblemType::kBinary   ? "roc_auc"
                                                                : "accuracy";
    std::unique_ptr<models::Model> model = family.create(params_json, task);
    models::FitContext context;
    context.threads = threads;
    context.num_gpus = gpus;
    Stopwatch fit_watch;
    model->Fit(problem.all, problem.all_labels, nullptr, {}, context);
    const double fit_seconds = fit_watch.Seconds();
    Stopwatch predict_watch;
    const std::vector<double> predictions = model->Predict(problem.test, threads);
    const double predict_seconds = predict_watch.Seconds();
    double predict_best_seconds = predict_seconds;
    const int predict_repeats = std::stoi(ArgValue(argc, argv, "--predict-repeats", "1"));
    for (int repeat = 1; repeat < predict_repeats; ++repeat) {
      Stopwatch again;
      TFG_CHECK(model->Predict(problem.test, threads) == predictions,
                "a repeated prediction of the test rows differs from the first");
      predict_best_seconds = std::min(predict_best_seconds, again.Seconds());
    }
    if (const std::string path = ArgValue(argc, argv, "--predictions", ""); !path.empty()) {
      const std::size_t outputs = static_cast<std::size_t>(task.outputs());
      std::string text;
      for (std::size_t k = 0; k < outputs; ++k)
        fmt::format_to(std::back_inserter(text), "output_{},", k);
      text += "label\n";
      for (std::int64_t row = 0; row < problem.test.num_rows; ++row) {
        for (std::size_t k = 0; k < outputs; ++k) {
          fmt::format_to(std::back_inserter(text), "{},", predictions[row * outputs + k]);
        }
        fmt::format_to(std::back_inserter(text), "{}\n", problem.test_labels[row]);
      }
      WriteFileAtomically(path, text);
    }
    const std::string model_bytes = model->Serialize();
    const metrics::Predictions scored{predictions, task.outputs()};
    std::string metric_json;
    auto add = [&](const char* name) {
      metric_json +=
          fmt::format(",\"{}\":{:.6f}", name, metrics::Score(name, problem.test_labels, scored));
    };
    if (problem.type == ProblemType::kBinary) {
      add("roc_auc");
      add("accuracy");
      add("log_loss");
    } else if (problem.type == ProblemType::kMulticlass) {
      add("accuracy");
      add("log_loss");
    } else {
      add("root_mean_squared_error");
      add("r2");
    }
    const models::ModelInfo info = model->Info();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    fmt::print(
        "{{\"family\":\"{}\",\"dataset\":\"{}\",\"rows\":{},\"test_rows\":{},\"params\":{},"
        "\"threads\":{}{},\"cuda_wait_seconds\":{:.4f},\"fit_seconds\":{:.4f},\"predict_seconds\":{"
        ":.4f},"
        "\"predict_best_seconds\":{:.4f},\"iterations\":{},"
        "\"device\":\"{}\",\"device_note\":\"{}\",\"peak_rss_bytes\":{},\"model_bytes\":{},"
        "\"model_sha256\":\"{}\"}}\n",
        family_key, problem.dataset, problem.all.num_rows, problem.test.num_rows, params_json,
        threads, metric_json, cuda_wait_seconds, fit_seconds, predict_seconds, predict_best_seconds,
        info.iterations, info.device, info.device_note,
        static_cast<long long>(usage.ru_maxrss) * 1024, model_bytes.size(), Sha256Hex(model_bytes));
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "family_bench: %s\n", error.what());
    return 1;
  }
}
