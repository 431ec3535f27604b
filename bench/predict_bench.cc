// Prediction speed of a saved predictor: batch throughput over a whole table and the latency of
// single-row predictions through the C++ API (a one-row table each, pipeline included).
//
//   predict_bench -m MODEL_DIR --data FILE [--repeats 3] [--single-rows 500] [--threads N]
// (--repeats 0: single rows only)
//
// Prints one JSON line: rows, batch_seconds (median of the repeats, reading excluded),
// rows_per_second, single_row_p50_ms, single_row_p99_ms, best_model.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "data/csv_reader.h"
#include "data/table.h"
#include "tabforge/predictor.h"

namespace {

std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int index = 1; index + 1 < argc; ++index) {
    if (argv[index] == name) return argv[index + 1];
  }
  return fallback;
}

double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(q * double(values.size() - 1) + 0.5);
  return values[std::min(at, values.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tabforge;
  try {
    const std::string model_dir = ArgValue(argc, argv, "-m", "");
    const std::string data_path = ArgValue(argc, argv, "--data", "");
    if (model_dir.empty() || data_path.empty()) {
      std::fprintf(stderr,
                   "usage: predict_bench -m MODEL_DIR --data FILE [--repeats 3] "
                   "[--single-rows 500]\n");
      return 2;
    }
    const int repeats = std::stoi(ArgValue(argc, argv, "--repeats", "3"));
    const int single_rows = std::stoi(ArgValue(argc, argv, "--single-rows", "500"));
    const TabularPredictor predictor = TabularPredictor::load(model_dir);
    const data::Table table = data::ReadCsv(data_path);
    std::vector<double> batch;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      Stopwatch watch;
      const ProbabilityTable out = predictor.predict_proba(table);
      batch.push_back(watch.Seconds());
      if (out.values.empty()) throw InternalError("no predictions");
    }
    std::vector<double> latencies;
    for (int row = 0; row < single_rows && row < table.num_rows(); ++row) {
      const data::Table one = data::SelectRows(table, {row});
      Stopwatch watch;
      const ProbabilityTable out = predictor.predict_proba(one);
      latencies.push_back(watch.Seconds() * 1e3);
    }
    const double batch_seconds = batch.empty() ? 0.0 : Quantile(batch, 0.5);
    fmt::print(
        "{{\"model\":\"{}\",\"best_model\":\"{}\",\"rows\":{},\"batch_seconds\":{:.4f},"
        "\"rows_per_second\":{:.0f},\"single_rows\":{},\"single_row_p50_ms\":{:.3f},"
        "\"single_row_p99_ms\":{:.3f}}}\n",
        model_dir, predictor.best_model(), table.num_rows(), batch_seconds,
        batch.empty() ? 0.0 : double(table.num_rows()) / batch_seconds, latencies.size(),
        latencies.empty() ? 0.0 : Quantile(latencies, 0.5),
        latencies.empty() ? 0.0 : Quantile(latencies, 0.99));
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "predict_bench: %s\n", error.what());
    return 1;
  }
}
