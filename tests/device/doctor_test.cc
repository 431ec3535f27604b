// Every doctor check, produced by fault injection (TABFORGE_INJECT_*, read only by discovery),
// so each finding and remedy is covered on a machine without a GPU; and the README's
// troubleshooting table is the check table.
#include "device/doctor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace tabforge::device {
namespace {

const char* const kInjected[] = {
    "TABFORGE_INJECT_DRIVER",      "TABFORGE_INJECT_INIT_ERROR",    "TABFORGE_INJECT_DEVICES",
    "TABFORGE_INJECT_PROCESSES",   "TABFORGE_INJECT_NVML",          "TABFORGE_INJECT_NO_CUDA_BUILD",
    "TABFORGE_INJECT_RUNTIME",     "TABFORGE_INJECT_ARCHITECTURES", "TABFORGE_INJECT_CONTAINER",
    "TABFORGE_INJECT_OS",          "TABFORGE_INJECT_CUDA_PATH",     "TABFORGE_INJECT_PATH",
    "TABFORGE_INJECT_INSTALL_DIR", "TABFORGE_INJECT_WORK_DIR",      "TABFORGE_INJECT_CUBLAS",
    "CUDA_VISIBLE_DEVICES"};

// Runs discovery with exactly `values` injected (on top of a healthy default GPU machine
// unless the values replace it) and returns the diagnosis.
Diagnosis Inject(std::map<std::string, std::string> values) {
  for (const char* name : kInjected) unsetenv(name);
  const std::map<std::string, std::string> healthy = {
      {"TABFORGE_INJECT_RUNTIME", "13.0"}, {"TABFORGE_INJECT_ARCHITECTURES", "75;80;86;89;90"},
      {"TABFORGE_INJECT_DRIVER", "13.0"},  {"TABFORGE_INJECT_DEVICES", "NVIDIA H200,9.0,150,140"},
      {"TABFORGE_INJECT_PROCESSES", ""},   {"TABFORGE_INJECT_CONTAINER", "0"},
      {"TABFORGE_INJECT_OS", "linux"},     {"TABFORGE_INJECT_CUBLAS", "libcublas.so.13"}};
  for (const auto& [name, value] : healthy) values.emplace(name, value);
  for (const auto& [name, value] : values) {
    if (value != "<unset>") setenv(name.c_str(), value.c_str(), 1);
  }
  Diagnosis diagnosis = Diagnose(DiscoverGpus());
  for (const char* name : kInjected) unsetenv(name);
  return diagnosis;
}

const CheckResult& Check(const Diagnosis& diagnosis, const std::string& id) {
  for (const CheckResult& check : diagnosis.checks) {
    if (check.id == id) return check;
  }
  ADD_FAILURE() << "no check " << id;
  static CheckResult none;
  return none;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Doctor, HealthyGpuMachineExitsZero) {
  const Diagnosis diagnosis = Inject({});
  EXPECT_EQ(diagnosis.exit_status, 0) << diagnosis.verdict;
  EXPECT_EQ(diagnosis.usable_device, 0);
  EXPECT_TRUE(Has(diagnosis.verdict, "NVIDIA H200"));
  ASSERT_EQ(diagnosis.checks.size(), CheckTable().size());
  for (const CheckResult& check : diagnosis.checks) {
    EXPECT_EQ(check.status, CheckStatus::kOk) << check.id << ": " << check.finding;
  }
}

TEST(Doctor, BuildWithoutCuda) {
  const Diagnosis diagnosis =
      Inject({{"TABFORGE_INJECT_NO_CUDA_BUILD", "1"}, {"TABFORGE_INJECT_RUNTIME", "<unset>"}});
  const CheckResult& check = Check(diagnosis, "cuda_build");
  EXPECT_EQ(check.status, CheckStatus::kError);
  EXPECT_TRUE(Has(check.remedy, "-DTABFORGE_CUDA=ON")) << check.remedy;
  EXPECT_EQ(diagnosis.exit_status, 1);
}

TEST(Doctor, NoDriver) {
  const Diagnosis diagnosis =
      Inject({{"TABFORGE_INJECT_DRIVER", "missing"}, {"TABFORGE_INJECT_DEVICES", "<unset>"}});
  const CheckResult& check = Check(diagnosis, "driver");
  EXPECT_EQ(check.status, CheckStatus::kError);
  EXPECT_TRUE(Has(check.finding, "libcuda.so.1")) << check.finding;
  EXPECT_TRUE(Has(check.remedy, "install the NVIDIA driver")) << check.remedy;
  EXPECT_EQ(diagnosis.exit_status, 1);
  EXPECT_TRUE(Has(diagnosis.verdict, "fits run on the CPU")) << diagnosis.verdict;
}

TEST(Doctor, DriverTooOldNamesTheMinimumDriver) {
  const Diagnosis diagnosis = Inject({{"TABFORGE_INJECT_DRIVER", "12.4"}});
  const CheckResult& check = Check(diagnosis, "driver_version");
  EXPECT_EQ(check.status, CheckStatus::kError);
  EXPECT_TRUE(Has(check.finding, "supports CUDA 12.4 but this build needs CUDA 13.0"))
      << check.finding;
  EXPECT_TRUE(Has(check.remedy, "580.65.06")) << check.remedy;
  EXPECT_EQ(diagnosis.exit_status, 2);
  // Same major version, older minor: it runs, with a warning.
  const Diagnosis minor =
      Inject({{"TABFORGE_INJECT_RUNTIME", "12.8"}, {"TABFORGE_INJECT_DRIVER", "12.4"}});
  EXPECT_EQ(Check(minor, "driver_version").status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(Check(minor, "driver_version").remedy, "570.26"));
  EXPECT_EQ(minor.exit_status, 0);
}

TEST(Doctor, CudaDoesNotStart) {
  const Diagnosis diagnosis = Inject({{"TABFORGE_INJECT_INIT_ERROR", "CUDA_ERROR_UNKNOWN"}});
  const CheckResult& check = Check(diagnosis, "cuda_init");
  EXPECT_EQ(check.status, CheckStatus::kError);
  EXPECT_TRUE(Has(check.finding, "CUDA_ERROR_UNKNOWN"));
  EXPECT_TRUE(Has(check.remedy, "nvidia-smi"));
  EXPECT_EQ(diagnosis.exit_status, 2);
}

TEST(Doctor, NoDeviceVisibleExplainsWhy) {
  const Diagnosis hidden =
      Inject({{"TABFORGE_INJECT_DEVICES", ""}, {"CUDA_VISIBLE_DEVICES", "-1"}});
  EXPECT_EQ(Check(hidden, "device_visible").status, CheckStatus::kError);
  EXPECT_TRUE(Has(Check(hidden, "device_visible").finding, "CUDA_VISIBLE_DEVICES is set to '-1'"));
  EXPECT_EQ(hidden.exit_status, 1);
  const Diagnosis container =
      Inject({{"TABFORGE_INJECT_DEVICES", ""}, {"TABFORGE_INJECT_CONTAINER", "1"}});
  EXPECT_TRUE(Has(Check(container, "device_visible").remedy, "docker run --gpus all"));
  const Diagnosis none = Inject({{"TABFORGE_INJECT_DEVICES", ""}});
  EXPECT_TRUE(Has(Check(none, "device_visible").finding, "no GPU is visible"));
}

TEST(Doctor, ComputeCapability) {
  const Diagnosis pascal = Inject({{"TABFORGE_INJECT_DEVICES", "Tesla P100,6.0,16,16"}});
  EXPECT_EQ(Check(pascal, "compute_capability").status, CheckStatus::kError);
  EXPECT_TRUE(Has(Check(pascal, "compute_capability").finding, "older than this build's kernels"));
  EXPECT_EQ(pascal.exit_status, 1);
  const std::map<std::string, std::string> old_build = {
      {"TABFORGE_INJECT_ARCHITECTURES", "60;70;80"}};
  auto with = [&](const std::string& device) {
    std::map<std::string, std::string> values = old_build;
    values["TABFORGE_INJECT_DEVICES"] = device;
    return Inject(values);
  };
  const Diagnosis p100 = with("Tesla P100,6.0,16,16");
  EXPECT_EQ(Check(p100, "compute_capability").status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(Check(p100, "compute_capability").finding, "no tensor-core fp16"));
  EXPECT_EQ(p100.exit_status, 0);
  const Diagnosis v100 = with("Tesla V100,7.0,32,32");
  EXPECT_TRUE(Has(Check(v100, "compute_capability").finding, "no bf16"));
}

TEST(Doctor, LowFreeMemoryNamesTheHolders) {
  const Diagnosis diagnosis = Inject({{"TABFORGE_INJECT_DEVICES", "RTX 4090,8.9,24,1.5"},
                                      {"TABFORGE_INJECT_PROCESSES", "4242,python,22"}});
  const CheckResult& check = Check(diagnosis, "memory");
  EXPECT_EQ(check.status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(check.finding, "1.5 GB free of 24.0 GB")) << check.finding;
  EXPECT_TRUE(Has(check.finding, "pid 4242 python (22.0 GB)")) << check.finding;
  EXPECT_TRUE(Has(check.remedy, "gpu_memory_fraction"));
  EXPECT_EQ(diagnosis.exit_status, 0);
}

TEST(Doctor, MissingNvml) {
  const Diagnosis diagnosis = Inject({{"TABFORGE_INJECT_NVML", "missing"}});
  EXPECT_EQ(Check(diagnosis, "nvml").status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(Check(diagnosis, "nvml").remedy, "libnvidia-ml.so.1"));
  EXPECT_EQ(diagnosis.exit_status, 0);
}

TEST(Doctor, MissingCublas) {
  const Diagnosis healthy = Inject({});
  EXPECT_EQ(Check(healthy, "cublas").status, CheckStatus::kOk);
  EXPECT_TRUE(Has(Check(healthy, "cublas").finding, "libcublas.so.13"));
  const Diagnosis diagnosis = Inject({{"TABFORGE_INJECT_CUBLAS", "missing"}});
  const CheckResult& cublas = Check(diagnosis, "cublas");
  EXPECT_EQ(cublas.status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(cublas.finding, "libcublas.so.13"));
  EXPECT_TRUE(Has(cublas.remedy, "LR and KNN on wider rows run on the CPU"));
  EXPECT_TRUE(Has(cublas.remedy, "LD_LIBRARY_PATH"));
  EXPECT_EQ(diagnosis.exit_status, 0);  // GBM still trains on the GPU
  const Diagnosis cpu_build =
      Inject({{"TABFORGE_INJECT_NO_CUDA_BUILD", "1"}, {"TABFORGE_INJECT_RUNTIME", "<unset>"}});
  EXPECT_TRUE(Has(Check(cpu_build, "cublas").finding, "not checked"));
}

TEST(Doctor, WindowsPaths) {
  const std::string toolkit = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0";
  const std::map<std::string, std::string> windows = {
      {"TABFORGE_INJECT_OS", "windows"},
      {"TABFORGE_INJECT_CUDA_PATH", toolkit},
      {"TABFORGE_INJECT_PATH", "C:\\Windows;" + toolkit + "\\bin"},
      {"TABFORGE_INJECT_INSTALL_DIR", "C:\\tabforge"},
      {"TABFORGE_INJECT_WORK_DIR", "C:\\data"}};
  auto with = [&](const std::map<std::string, std::string>& changes) {
    std::map<std::string, std::string> values = windows;
    for (const auto& [name, value] : changes) values[name] = value;
    return Inject(values);
  };
  const Diagnosis good = with({});
  for (const char* id : {"windows_cuda_path", "windows_dll_path", "path_characters"}) {
    EXPECT_EQ(Check(good, id).status, CheckStatus::kOk) << id << ": " << Check(good, id).finding;
  }
  EXPECT_EQ(good.exit_status, 0);

  const Diagnosis unset = with({{"TABFORGE_INJECT_CUDA_PATH", ""}});
  EXPECT_EQ(Check(unset, "windows_cuda_path").status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(Check(unset, "windows_cuda_path").finding, "CUDA_PATH is not set"));

  const Diagnosis other = with({{"TABFORGE_INJECT_CUDA_PATH",
                                 "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"}});
  EXPECT_EQ(Check(other, "windows_cuda_path").status, CheckStatus::kError);
  EXPECT_TRUE(Has(Check(other, "windows_cuda_path").finding, "not the CUDA 13.0"));
  EXPECT_EQ(other.exit_status, 2);

  const Diagnosis no_bin = with({{"TABFORGE_INJECT_PATH", "C:\\Windows;C:\\Windows\\System32"}});
  EXPECT_EQ(Check(no_bin, "windows_dll_path").status, CheckStatus::kError);
  EXPECT_TRUE(Has(Check(no_bin, "windows_dll_path").remedy, "%CUDA_PATH%\\bin"));
  EXPECT_EQ(no_bin.exit_status, 2);

  const Diagnosis spaces = with({{"TABFORGE_INJECT_INSTALL_DIR", "C:\\Program Files\\tabforge"}});
  EXPECT_EQ(Check(spaces, "path_characters").status, CheckStatus::kWarning);
  const Diagnosis accents = with({{"TABFORGE_INJECT_WORK_DIR", "C:\\Users\\Jos\xc3\xa9\\data"}});
  EXPECT_EQ(Check(accents, "path_characters").status, CheckStatus::kWarning);
  EXPECT_TRUE(Has(Check(accents, "path_characters").finding, "working folder"));
}

TEST(Doctor, EveryCheckRowHasAnInjectedProblem) {
  // The tests above drive each row to a warning or an error; keep the table and them in step.
  const std::vector<std::string> covered = {
      "cuda_build",         "driver",         "driver_version", "cuda_init", "device_visible",
      "compute_capability", "memory",         "nvml",           "cublas",    "windows_cuda_path",
      "windows_dll_path",   "path_characters"};
  ASSERT_EQ(CheckTable().size(), covered.size());
  for (std::size_t at = 0; at < covered.size(); ++at) EXPECT_EQ(CheckTable()[at].id, covered[at]);
}

TEST(Doctor, ReadmeTroubleshootingTableIsTheCheckTable) {
  std::ifstream file(std::string(TABFORGE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(file.good()) << "README.md not found";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_TRUE(Has(text.str(), FormatMarkdownTable()))
      << "README.md's troubleshooting table differs from the checks; paste the output of "
         "`tabforge doctor --markdown` into it:\n"
      << FormatMarkdownTable();
}

TEST(Doctor, ReportAndJsonCarryTheVerdict) {
  for (const char* name : kInjected) unsetenv(name);
  setenv("TABFORGE_INJECT_DRIVER", "missing", 1);
  const GpuEnvironment env = DiscoverGpus();
  unsetenv("TABFORGE_INJECT_DRIVER");
  const Diagnosis diagnosis = Diagnose(env);
  EXPECT_TRUE(Has(FormatReport(env, diagnosis), "verdict: "));
  EXPECT_TRUE(Has(FormatJson(env, diagnosis), "\"exit_status\": 1"));
  EXPECT_TRUE(env.injected);
}

}  // namespace
}  // namespace tabforge::device
