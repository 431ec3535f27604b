// CSV reading benchmark.
//   csv_bench generate --rows N --cols C --seed S -o FILE   write a numeric CSV (fixed seed)
//   csv_bench read FILE [--threads N] [--repeat R]          read it R times, print one JSON line
// The JSON line holds the median seconds, MB/s over the CSV text (after gunzip), the peak
// resident set size of this process and the numeric payload (rows x columns x 8 bytes).
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "data/csv_reader.h"

namespace {

using tabforge::data::CsvOptions;
using tabforge::data::CsvReadStats;

std::string ArgValue(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int index = 2; index + 1 < argc; ++index) {
    if (argv[index] == name) return argv[index + 1];
  }
  return fallback;
}

int Generate(int argc, char** argv) {
  const long rows = std::stol(ArgValue(argc, argv, "--rows", "1000000"));
  const int cols = std::stoi(ArgValue(argc, argv, "--cols", "30"));
  const unsigned seed = static_cast<unsigned>(std::stoul(ArgValue(argc, argv, "--seed", "42")));
  const std::string path = ArgValue(argc, argv, "-o", "");
  if (path.empty()) {
    std::fprintf(stderr, "csv_bench generate: -o FILE is required\n");
    return 2;
  }
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "csv_bench generate: cannot write %s\n", path.c_str());
    return 2;
  }
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::string line;
  for (int col = 0; col < cols; ++col) line += fmt::format("{}f{}", col ? "," : "", col);
  line += '\n';
  std::fputs(line.c_str(), out);
  for (long row = 0; row < rows; ++row) {
    line.clear();
    for (int col = 0; col < cols; ++col) {
      // Mixed magnitudes and signs, 5 significant digits: typical measurement columns.
      double value = normal(random) * (col % 3 == 0 ? 1.0 : col % 3 == 1 ? 100.0 : 0.01);
      fmt::format_to(std::back_inserter(line), "{}{:.5g}", col ? "," : "", value);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
  std::fclose(out);
  return 0;
}

int Read(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "csv_bench read FILE [--threads N] [--repeat R]\n");
    return 2;
  }
  const std::string path = argv[2];
  CsvOptions options;
  options.num_threads = std::stoi(ArgValue(argc, argv, "--threads", "0"));
  const int repeat = std::stoi(ArgValue(argc, argv, "--repeat", "5"));
  std::vector<double> seconds;
  CsvReadStats stats;
  std::int64_t rows = 0;
  int cols = 0;
  for (int run = 0; run < repeat; ++run) {
    tabforge::Stopwatch watch;
    tabforge::data::Table table = tabforge::data::ReadCsv(path, options, &stats);
    seconds.push_back(watch.Seconds());
    rows = table.num_rows();
    cols = table.num_columns();
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::string runs;
  for (double value : seconds) runs += fmt::format("{}{:.4f}", runs.empty() ? "" : ",", value);
  fmt::print(
      "{{\"tool\":\"tabforge\",\"file\":\"{}\",\"bytes\":{},\"rows\":{},\"cols\":{},"
      "\"threads\":{},\"chunks\":{},\"seconds\":{:.4f},\"runs\":[{}],\"mb_per_s\":{:.1f},"
      "\"load_seconds\":{:.4f},\"parse_seconds\":{:.4f},\"peak_rss_bytes\":{},"
      "\"payload_bytes\":{}}}\n",
      path, stats.input_bytes, rows, cols, stats.threads, stats.chunks, median, runs,
      double(stats.input_bytes) / 1e6 / median, stats.load_seconds, stats.parse_seconds,
      static_cast<long long>(usage.ru_maxrss) * 1024, rows * cols * 8);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "generate") return Generate(argc, argv);
    if (mode == "read") return Read(argc, argv);
    std::fprintf(stderr, "usage: csv_bench generate|read ... (see the header of csv_bench.cc)\n");
    return 2;
  } catch (const tabforge::Error& error) {
    std::fprintf(stderr, "csv_bench: %s\n", error.what());
    return 1;
  }
}
