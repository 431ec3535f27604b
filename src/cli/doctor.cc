// `tabforge doctor [--json] [--markdown] [--speed]`: the GPU environment in plain words, with a
// remedy for each problem (device/doctor.h holds the checks).
#include "device/doctor.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <random>

#include "cli/commands.h"
#include "core/context.h"
#include "core/timer.h"
#include "models/gbm/gbm.h"

namespace tabforge::cli {
namespace {

struct DoctorArgs {
  bool json = false;
  bool markdown = false;
  bool speed = false;
};

// A HIGGS-like binary problem: dense normal features, a nonlinear label with noise.
void MakeSpeedProblem(std::int64_t rows, int features, features::FeatureMatrix& matrix,
                      std::vector<double>& labels) {
  matrix.num_rows = rows;
  matrix.numeric.resize(static_cast<std::size_t>(rows) * features);
  for (int f = 0; f < features; ++f)
    matrix.numeric_info.push_back({fmt::format("x{}", f), "x", 0, {}});
  std::mt19937_64 random(11);
  std::normal_distribution<float> normal;
  for (float& value : matrix.numeric) value = normal(random);
  labels.resize(static_cast<std::size_t>(rows));
  for (std::int64_t row = 0; row < rows; ++row) {
    auto x = [&](int f) { return double(matrix.numeric[f * rows + row]); };
    const double score = x(0) * x(1) + std::sin(2 * x(2)) + 0.5 * x(3) - 0.25 * x(4) * x(4) +
                         0.1 * x(5) * x(6) + 0.6 * normal(random);
    labels[row] = score > 0 ? 1.0 : 0.0;
  }
}

// Trains the same GBM on the CPU and on each usable GPU; prints the times and the speed-up.
// Returns false when a GPU fit fell back to the CPU.
bool RunSpeedTest(const device::GpuEnvironment& env, const device::Diagnosis& diagnosis) {
  constexpr std::int64_t kRows = 300000;
  constexpr int kFeatures = 28;
  features::FeatureMatrix matrix;
  std::vector<double> labels;
  MakeSpeedProblem(kRows, kFeatures, matrix, labels);
  gbm::GbmParams params;
  params.num_iterations = 100;
  params.num_leaves = 63;
  fmt::print("speed test: GBM, {} rows x {} features, {} rounds, {} leaves\n", kRows, kFeatures,
             params.num_iterations, params.num_leaves);
  Stopwatch cpu_watch;
  const gbm::GbmModel cpu = gbm::GbmModel::Fit(matrix, labels, {}, nullptr, {}, params, 0);
  const double cpu_seconds = cpu_watch.Seconds();
  fmt::print("  cpu       {:7.2f} s  ({} threads)\n", cpu_seconds, Context{}.Threads());
  if (diagnosis.usable_device < 0) {
    fmt::print("  no usable GPU to compare: {}\n", diagnosis.verdict);
    return true;
  }
  const std::string cpu_bytes = cpu.Serialize();
  bool all_on_gpu = true;
  for (const device::GpuDevice& device : env.devices) {
    params.device = "cuda";
    params.gpu_device_id = device.ordinal;
    Stopwatch watch;
    const gbm::GbmModel gpu = gbm::GbmModel::Fit(matrix, labels, {}, nullptr, {}, params, 0);
    const double seconds = watch.Seconds();
    if (gpu.report().device == "cpu") {
      fmt::print("  GPU {}     did not train: {}\n", device.ordinal, gpu.report().device_note);
      all_on_gpu = false;
      continue;
    }
    fmt::print("  GPU {}     {:7.2f} s  {}: {:.1f}x the CPU; model {} the CPU's\n", device.ordinal,
               seconds, device.name, cpu_seconds / seconds,
               gpu.Serialize() == cpu_bytes ? "identical to" : "DIFFERS from");
  }
  return all_on_gpu;
}

}  // namespace

void AddDoctorCommand(CLI::App& app) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* command = app.add_subcommand(
      "doctor",
      "Diagnose the GPU environment: driver, CUDA versions, devices, memory, with remedies. "
      "Exit status 0: GPU training will work; 1: fits fall back to the CPU; 2: the environment "
      "is broken");
  command->add_flag("--json", args->json, "print the report as JSON");
  command->add_flag("--markdown", args->markdown,
                    "print the troubleshooting table (symptom, check, cause) in Markdown");
  command->add_flag("--speed", args->speed,
                    "also train a short GBM on the CPU and on each GPU and print the speed-up");
  command->callback([args]() {
    if (args->markdown) {
      fmt::print("{}", device::FormatMarkdownTable());
      return;
    }
    const device::GpuEnvironment env = device::DiscoverGpus(/*open_cublas=*/true);
    const device::Diagnosis diagnosis = device::Diagnose(env);
    fmt::print("{}", args->json ? device::FormatJson(env, diagnosis)
                                : device::FormatReport(env, diagnosis));
    if (args->speed && !args->json) RunSpeedTest(env, diagnosis);
    SetExitStatus(diagnosis.exit_status);
  });
}

}  // namespace tabforge::cli
