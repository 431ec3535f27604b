// Feature pipeline benchmark: fit and transform throughput on one table.
//   features_bench FILE --label COL [--threads N] [--repeat R]
// Prints one JSON line: rows, features produced, median fit and transform seconds, rows/s,
// and the peak resident set size of this process (table included).
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "data/csv_reader.h"
#include "features/pipeline.h"

namespace {

std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int index = 2; index + 1 < argc; ++index) {
    if (argv[index] == name) return argv[index + 1];
  }
  return fallback;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: features_bench FILE --label COL [--threads N] [--repeat R]\n");
    return 2;
  }
  try {
    const std::string path = argv[1];
    const std::string label = ArgValue(argc, argv, "--label", "");
    const int threads = std::stoi(ArgValue(argc, argv, "--threads", "0"));
    const int repeat = std::stoi(ArgValue(argc, argv, "--repeat", "5"));
    tabforge::data::CsvOptions csv;
    csv.num_threads = threads;
    tabforge::data::Table table = tabforge::data::ReadCsv(path, csv);
    tabforge::features::PipelineOptions options;
    options.num_threads = threads;
    std::vector<double> fit_seconds, transform_seconds;
    tabforge::features::FeatureMatrix matrix;
    for (int run = 0; run < repeat; ++run) {
      tabforge::Stopwatch fit_watch;
      tabforge::features::FeaturePipeline pipeline =
          tabforge::features::FeaturePipeline::Fit(table, label, options);
      fit_seconds.push_back(fit_watch.Seconds());
      tabforge::Stopwatch transform_watch;
      matrix = pipeline.Transform(table, threads);
      transform_seconds.push_back(transform_watch.Seconds());
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double fit = Median(fit_seconds);
    const double transform = Median(transform_seconds);
    const double rows = double(table.num_rows());
    fmt::print(
        "{{\"tool\":\"tabforge\",\"file\":\"{}\",\"rows\":{},\"threads\":{},\"numeric_features\":{}"
        ","
        "\"categorical_features\":{},\"ngram_features\":{},\"fit_seconds\":{:.4f},"
        "\"transform_seconds\":{:.4f},\"transform_rows_per_s\":{:.0f},"
        "\"fit_transform_rows_per_s\":{:.0f},\"peak_rss_bytes\":{}}}\n",
        path, table.num_rows(), threads, matrix.num_numeric(), matrix.num_categorical(),
        matrix.ngrams.num_columns, fit, transform, rows / transform, rows / (fit + transform),
        static_cast<long long>(usage.ru_maxrss) * 1024);
    return 0;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "features_bench: %s\n", error.what());
    return 1;
  }
}
