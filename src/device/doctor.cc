#include "device/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tabforge::device {
namespace {

// Memory below which a GPU counts as nearly full.
constexpr double kLowFreeBytes = 2e9;
constexpr double kLowFreeFraction = 0.2;

std::string Gigabytes(std::int64_t bytes) { return fmt::format("{:.1f} GB", double(bytes) / 1e9); }

// The lowest compute capability this build has kernels for (e.g. 75), or 0 when unknown.
int LowestArchitecture(const std::string& architectures) {
  int lowest = 0;
  std::size_t at = 0;
  while (at < architectures.size()) {
    const std::size_t end = architectures.find_first_of(";,", at);
    const std::string part =
        architectures.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const int value = std::atoi(part.c_str());
    if (value > 0 && (lowest == 0 || value < lowest)) lowest = value;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lowest;
}

bool HasNonAscii(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

// Lower-cased, with forward slashes, for comparing Windows paths.
std::string NormalPath(std::string path) {
  for (char& c : path) {
    if (c == '\\') c = '/';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  return path;
}

CheckResult Result(const char* id, CheckStatus status, std::string finding,
                   std::string remedy = std::string(), bool breaks_gpu = false) {
  CheckResult result;
  result.id = id;
  result.status = status;
  result.finding = std::move(finding);
  result.remedy = std::move(remedy);
  result.breaks_gpu = breaks_gpu && status == CheckStatus::kError;
  return result;
}

bool NoDeviceError(const std::string& init_error) { return init_error == "CUDA_ERROR_NO_DEVICE"; }

}  // namespace

const std::vector<CheckRow>& CheckTable() {
  static const std::vector<CheckRow> table = {
      {"cuda_build", "`--gpus 1` trains on the CPU; `tabforge --version` says \"CPU only\"",
       "this tabforge was built without the CUDA backend"},
      {"driver", "`libcuda.so.1` / `nvcuda.dll` not found; \"no CUDA-capable device is detected\"",
       "the NVIDIA driver library cannot be loaded"},
      {"driver_version",
       "\"CUDA driver version is insufficient for CUDA runtime version\"; CUDA / driver / "
       "framework version mismatch",
       "the driver supports an older CUDA than this build's runtime"},
      {"cuda_init", "\"CUDA initialization failed\", CUDA_ERROR_UNKNOWN, GPU lost after suspend",
       "the driver is loaded but CUDA does not start"},
      {"device_visible",
       "workers do not see the GPU; \"Specified num_gpus: 1, but only 0 are available\"",
       "no GPU is visible: CUDA_VISIBLE_DEVICES, a container without GPU access, WSL2, no GPU"},
      {"compute_capability",
       "\"no kernel image is available for execution on the device\"; slow half precision",
       "the GPU is older than this build's kernels (or lacks tensor-core fp16 / bf16)"},
      {"memory", "\"CUDA out of memory\"", "little free GPU memory, and which processes hold it"},
      {"nvml", "the report shows no GPU utilisation or processes",
       "NVML (libnvidia-ml) cannot be loaded"},
      {"cublas",
       "KNN / LR say \"cuBLAS ... could not be loaded\" and run on the CPU; `libcublas.so.*` / "
       "`cublas64_*.dll` not found",
       "cuBLAS (LR, and KNN on rows wider than 64 columns, on the GPU) cannot be loaded"},
      {"windows_cuda_path",
       "\"DLL load failed\" with CUDA_PATH unset or set to another CUDA version",
       "Windows: CUDA_PATH missing or pointing at a different version than the runtime"},
      {"windows_dll_path", "\"DLL load failed\": cudart64_*.dll / cublas64_*.dll not found",
       "Windows: the CUDA bin folder is not on the DLL search path (PATH)"},
      {"path_characters",
       "files not found or \"DLL load failed\" under paths with spaces or non-ASCII characters",
       "Windows: the install or working folder contains spaces or non-ASCII characters"},
  };
  return table;
}

std::string MinimumDriver(int cuda_version) {
  // NVIDIA's toolkit release notes: the first Linux / Windows driver of each CUDA release.
  struct Entry {
    int cuda;
    const char* linux_driver;
    const char* windows_driver;
  };
  static const Entry kDrivers[] = {
      {13000, "580.65.06", "580.88"}, {12090, "575.51.03", "576.02"},
      {12080, "570.26", "570.65"},    {12060, "560.28.03", "560.76"},
      {12050, "555.42.02", "555.85"}, {12040, "550.54.14", "551.61"},
      {12030, "545.23.06", "546.12"}, {12020, "535.54.03", "536.25"},
      {12010, "530.30.02", "531.14"}, {12000, "525.60.13", "527.41"},
      {11080, "520.61.05", "520.06"},
  };
  for (const Entry& entry : kDrivers) {
    if (cuda_version >= entry.cuda) {
      return fmt::format("{} on Linux, {} on Windows", entry.linux_driver, entry.windows_driver);
    }
  }
  return "one that supports CUDA " + CudaVersionText(cuda_version);
}

const char* StatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarning:
      return "warning";
    case CheckStatus::kError:
      return "error";
  }
  return "?";
}

Diagnosis Diagnose(const GpuEnvironment& env) {
  Diagnosis diagnosis;
  std::vector<CheckResult>& checks = diagnosis.checks;
  const std::string runtime = CudaVersionText(env.runtime_version);

  // cuda_build
  if (env.built_with_cuda) {
    checks.push_back(
        Result("cuda_build", CheckStatus::kOk,
               fmt::format("built with CUDA {} for architectures {}", runtime, env.architectures)));
  } else {
    checks.push_back(Result(
        "cuda_build", CheckStatus::kError, "this tabforge was built without CUDA support",
        "build with -DTABFORGE_CUDA=ON on a machine with the CUDA toolkit (nvcc) installed, or "
        "install a CUDA build of tabforge"));
  }
  // driver
  if (env.driver_found) {
    checks.push_back(Result("driver", CheckStatus::kOk,
                            fmt::format("NVIDIA driver {}supports CUDA {}",
                                        env.driver_version.empty() ? "" : env.driver_version + " ",
                                        CudaVersionText(env.driver_cuda_version))));
  } else {
    checks.push_back(Result(
        "driver", CheckStatus::kError,
        env.windows ? "no NVIDIA driver: nvcuda.dll cannot be loaded"
                    : "no NVIDIA driver: libcuda.so.1 cannot be loaded",
        env.in_wsl ? "install the NVIDIA driver on Windows (WSL2 uses the Windows driver; do "
                     "not install a Linux driver inside WSL)"
                   : "install the NVIDIA driver for this GPU (nvidia-smi must then list it); on "
                     "a machine without an NVIDIA GPU, fits run on the CPU"));
  }
  // driver_version
  bool driver_ok = env.driver_found;
  if (!env.driver_found || !env.built_with_cuda) {
    checks.push_back(Result("driver_version", CheckStatus::kOk,
                            "not checked (needs both the driver and a CUDA build)"));
  } else if (env.driver_cuda_version >= env.runtime_version) {
    checks.push_back(Result("driver_version", CheckStatus::kOk,
                            fmt::format("the driver's CUDA {} covers this build's runtime {}",
                                        CudaVersionText(env.driver_cuda_version), runtime)));
  } else if (env.driver_cuda_version / 1000 == env.runtime_version / 1000) {
    checks.push_back(Result(
        "driver_version", CheckStatus::kWarning,
        fmt::format("the driver supports CUDA {}, older than this build's runtime {} (same major "
                    "version: it runs through minor-version compatibility, but kernels newer "
                    "than the driver may fail to load)",
                    CudaVersionText(env.driver_cuda_version), runtime),
        "update the NVIDIA driver to at least " + MinimumDriver(env.runtime_version)));
  } else {
    driver_ok = false;
    checks.push_back(
        Result("driver_version", CheckStatus::kError,
               fmt::format("the driver supports CUDA {} but this build needs CUDA {}",
                           CudaVersionText(env.driver_cuda_version), runtime),
               "update the NVIDIA driver to at least " + MinimumDriver(env.runtime_version) +
                   ", or use a tabforge built for CUDA " + CudaVersionText(env.driver_cuda_version),
               true));
  }
  // cuda_init
  if (!env.driver_found) {
    checks.push_back(Result("cuda_init", CheckStatus::kOk, "not checked (no driver)"));
  } else if (env.init_error.empty() || NoDeviceError(env.init_error)) {
    checks.push_back(Result("cuda_init", CheckStatus::kOk, "CUDA starts"));
  } else {
    driver_ok = false;
    checks.push_back(Result(
        "cuda_init", CheckStatus::kError, "CUDA does not start: " + env.init_error,
        "check that nvidia-smi lists the GPU; reload the driver or reboot (GPUs can be lost "
        "after suspend); in a container, pass the /dev/nvidia* devices (docker run --gpus all); "
        "on WSL2, update the Windows driver",
        true));
  }
  // device_visible
  if (!env.driver_found || (!env.init_error.empty() && !NoDeviceError(env.init_error))) {
    checks.push_back(Result("device_visible", CheckStatus::kOk, "not checked (CUDA not started)"));
  } else if (!env.devices.empty()) {
    checks.push_back(Result("device_visible", CheckStatus::kOk,
                            fmt::format("{} GPU(s) visible", env.devices.size())));
  } else if (env.visible_devices_set) {
    checks.push_back(Result(
        "device_visible", CheckStatus::kError,
        fmt::format("no GPU is visible: CUDA_VISIBLE_DEVICES is set to '{}', which hides them",
                    env.visible_devices),
        "unset CUDA_VISIBLE_DEVICES, or set it to the index or UUID of a GPU that nvidia-smi -L "
        "lists (workers inherit it from the process that starts them)"));
  } else if (env.in_container) {
    checks.push_back(Result(
        "device_visible", CheckStatus::kError, "no GPU is visible inside this container",
        "start the container with GPU access: docker run --gpus all (NVIDIA Container Toolkit "
        "installed on the host), or the nvidia.com/gpu resource on Kubernetes"));
  } else if (env.in_wsl) {
    checks.push_back(Result("device_visible", CheckStatus::kError, "no GPU is visible in WSL2",
                            "update the NVIDIA driver on Windows and run wsl --update; "
                            "nvidia-smi inside WSL must list the GPU"));
  } else {
    checks.push_back(Result("device_visible", CheckStatus::kError,
                            "the driver is loaded but no GPU is visible",
                            "check that nvidia-smi lists the GPU; reseat or enable it, or "
                            "train on the CPU"));
  }
  // compute_capability: the usable GPUs are those this build has kernels for.
  const int lowest = LowestArchitecture(env.architectures);
  std::vector<int> usable;
  {
    std::vector<std::string> old, no_fp16, no_bf16;
    for (const GpuDevice& device : env.devices) {
      const int capability = device.major * 10 + device.minor;
      const std::string label = fmt::format("GPU {} ({}, compute {}.{})", device.ordinal,
                                            device.name, device.major, device.minor);
      if (lowest > 0 && capability < lowest) {
        old.push_back(label);
        continue;
      }
      usable.push_back(device.ordinal);
      if (capability < 70) {
        no_fp16.push_back(label);
      } else if (capability < 80) {
        no_bf16.push_back(label);
      }
    }
    auto join = [](const std::vector<std::string>& items) {
      std::string out;
      for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
      return out;
    };
    if (env.devices.empty()) {
      checks.push_back(Result("compute_capability", CheckStatus::kOk, "not checked (no GPU)"));
    } else if (!old.empty()) {
      checks.push_back(
          Result("compute_capability", usable.empty() ? CheckStatus::kError : CheckStatus::kWarning,
                 fmt::format("{} older than this build's kernels (compute {}.{} and newer)",
                             join(old), lowest / 10, lowest % 10),
                 "use a newer GPU, or build tabforge with CMAKE_CUDA_ARCHITECTURES including it"));
    } else if (!no_fp16.empty()) {
      checks.push_back(Result("compute_capability", CheckStatus::kWarning,
                              join(no_fp16) + ": below compute 7.0, no tensor-core fp16",
                              "tree models train normally; neural networks run slowly in half "
                              "precision on this GPU (compute 7.0+ has tensor cores)"));
    } else if (!no_bf16.empty()) {
      checks.push_back(Result("compute_capability", CheckStatus::kWarning,
                              join(no_bf16) + ": below compute 8.0, no bf16",
                              "neural networks use fp16 instead of bf16 on this GPU (compute "
                              "8.0+ has bf16)"));
    } else {
      checks.push_back(Result("compute_capability", CheckStatus::kOk,
                              "every visible GPU has tensor-core fp16 and bf16"));
    }
  }
  if (env.built_with_cuda && driver_ok && !usable.empty()) diagnosis.usable_device = usable[0];
  // memory
  if (diagnosis.usable_device < 0) {
    checks.push_back(Result("memory", CheckStatus::kOk, "not checked (no usable GPU)"));
  } else {
    const GpuDevice& device = env.devices[diagnosis.usable_device];
    if (device.free_bytes < 0) {
      checks.push_back(Result("memory", CheckStatus::kOk,
                              fmt::format("{} total; free memory unknown without NVML",
                                          Gigabytes(device.total_bytes))));
    } else if (double(device.free_bytes) < kLowFreeBytes ||
               double(device.free_bytes) < kLowFreeFraction * double(device.total_bytes)) {
      std::string holders;
      for (const GpuProcess& process : device.processes) {
        holders += fmt::format(
            "{}pid {} {}{}", holders.empty() ? "" : ", ", process.pid,
            process.name.empty() ? "(unnamed)" : process.name,
            process.used_bytes >= 0 ? " (" + Gigabytes(process.used_bytes) + ")" : std::string());
      }
      checks.push_back(Result(
          "memory", CheckStatus::kWarning,
          fmt::format("GPU {} has {} free of {}{}", device.ordinal, Gigabytes(device.free_bytes),
                      Gigabytes(device.total_bytes), holders.empty() ? "" : "; held by " + holders),
          "end the processes holding GPU memory or pick another GPU (--gpu-id / gpu_device_id); "
          "a fit whose data does not fit falls back to the CPU (gpu_memory_fraction caps what "
          "it takes)"));
    } else {
      checks.push_back(
          Result("memory", CheckStatus::kOk,
                 fmt::format("GPU {}: {} free of {}", device.ordinal, Gigabytes(device.free_bytes),
                             Gigabytes(device.total_bytes))));
    }
  }
  // nvml
  if (!env.driver_found) {
    checks.push_back(Result("nvml", CheckStatus::kOk, "not checked (no driver)"));
  } else if (env.nvml_found) {
    checks.push_back(Result("nvml", CheckStatus::kOk, "NVML answers"));
  } else {
    checks.push_back(Result("nvml", CheckStatus::kWarning,
                            "NVML cannot be loaded: " + env.nvml_error,
                            "install the driver's NVML library (libnvidia-ml.so.1, part of the "
                            "driver packages); training works without it"));
  }
  // cublas
  if (!env.built_with_cuda) {
    checks.push_back(Result("cublas", CheckStatus::kOk, "not checked (CPU-only build)"));
  } else if (!env.cublas_checked) {
    checks.push_back(Result("cublas", CheckStatus::kOk, "not checked (no GPU)"));
  } else if (env.cublas_found) {
    checks.push_back(Result("cublas", CheckStatus::kOk, "cuBLAS opens (" + env.cublas_name + ")"));
  } else {
    checks.push_back(Result(
        "cublas", CheckStatus::kWarning, "cuBLAS cannot be loaded: " + env.cublas_error,
        fmt::format("install the CUDA {} toolkit's cuBLAS (libcublas; Debian/Ubuntu: the "
                    "cuda-libraries package) or put its folder on LD_LIBRARY_PATH (Windows: "
                    "PATH); GBM (and KNN on rows of up to 64 columns) still run on the GPU, LR and "
                    "KNN on wider rows run on the CPU without it",
                    runtime)));
  }
  // Windows checks.
  if (!env.windows) {
    for (const char* id : {"windows_cuda_path", "windows_dll_path", "path_characters"}) {
      checks.push_back(Result(id, CheckStatus::kOk, "not checked (not Windows)"));
    }
  } else {
    const std::string wanted = "v" + runtime;  // e.g. v13.0, as the installer names the folder
    if (!env.cuda_path_set) {
      checks.push_back(Result(
          "windows_cuda_path", CheckStatus::kWarning, "CUDA_PATH is not set",
          fmt::format("install the CUDA {} toolkit (its installer sets CUDA_PATH) or set CUDA_PATH "
                      "to its folder, e.g. C:\\Program Files\\NVIDIA GPU Computing "
                      "Toolkit\\CUDA\\{}",
                      runtime, wanted)));
    } else if (env.built_with_cuda &&
               NormalPath(env.cuda_path).find(NormalPath(wanted)) == std::string::npos) {
      checks.push_back(Result(
          "windows_cuda_path", CheckStatus::kError,
          fmt::format("CUDA_PATH is {}, not the CUDA {} this build uses", env.cuda_path, runtime),
          fmt::format("set CUDA_PATH to the CUDA {} toolkit folder (...\\CUDA\\{}) and put its bin "
                      "folder first on PATH",
                      runtime, wanted),
          true));
    } else {
      checks.push_back(
          Result("windows_cuda_path", CheckStatus::kOk, "CUDA_PATH is " + env.cuda_path));
    }
    const std::string bin = NormalPath(env.cuda_path + "\\bin");
    bool on_path = false;
    std::size_t at = 0;
    const std::string path = env.search_path;
    while (at <= path.size()) {
      const std::size_t end = path.find(';', at);
      const std::string entry =
          path.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (env.cuda_path_set && NormalPath(entry) == bin) on_path = true;
      if (NormalPath(entry).find("/cuda/" + NormalPath(wanted) + "/bin") != std::string::npos) {
        on_path = true;
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (!env.built_with_cuda || on_path) {
      checks.push_back(Result("windows_dll_path", CheckStatus::kOk,
                              on_path ? "the CUDA bin folder is on PATH" : "not needed (no CUDA)"));
    } else {
      checks.push_back(Result(
          "windows_dll_path", CheckStatus::kError,
          fmt::format("the CUDA {} bin folder is not on PATH, so cudart64 / cublas64 DLLs do not "
                      "load",
                      runtime),
          "add %CUDA_PATH%\\bin to PATH (System Properties > Environment Variables) and open a "
          "new terminal",
          true));
    }
    std::vector<std::string> odd;
    for (const auto& [what, folder] :
         {std::pair<std::string, std::string>{"install", env.install_dir},
          {"working", env.work_dir}}) {
      if (folder.find(' ') != std::string::npos || HasNonAscii(folder)) {
        odd.push_back(fmt::format("the {} folder '{}'", what, folder));
      }
    }
    if (odd.empty()) {
      checks.push_back(Result("path_characters", CheckStatus::kOk,
                              "install and working folders are plain ASCII without spaces"));
    } else {
      std::string list;
      for (const std::string& item : odd) list += (list.empty() ? "" : " and ") + item;
      checks.push_back(Result(
          "path_characters", CheckStatus::kWarning,
          list + " contains spaces or non-ASCII characters",
          "move tabforge and your data to a folder such as C:\\tabforge (some CUDA and driver "
          "tools mishandle such paths)"));
    }
  }

  const auto broken = std::find_if(checks.begin(), checks.end(),
                                   [](const CheckResult& check) { return check.breaks_gpu; });
  auto first_problem = [&]() {
    for (const CheckResult& check : checks) {
      if (check.status == CheckStatus::kError) return check.finding;
    }
    for (const CheckResult& check : checks) {
      if (check.status == CheckStatus::kWarning) return check.finding;
    }
    return std::string("no usable GPU");
  };
  if (broken != checks.end()) {
    diagnosis.exit_status = 2;
    diagnosis.verdict = "the GPU environment is broken: " + broken->finding +
                        "; fits run on the CPU until it is fixed";
  } else if (diagnosis.usable_device >= 0) {
    diagnosis.exit_status = 0;
    diagnosis.verdict = fmt::format("GPU training will work: GPU {} ({})", diagnosis.usable_device,
                                    env.devices[diagnosis.usable_device].name);
  } else {
    diagnosis.exit_status = 1;
    diagnosis.verdict = "GPU training is not available, fits run on the CPU: " + first_problem();
  }
  return diagnosis;
}

std::string FormatReport(const GpuEnvironment& env, const Diagnosis& diagnosis) {
  std::string out = "tabforge doctor\n";
  out += fmt::format("  build     {}\n",
                     env.built_with_cuda
                         ? fmt::format("CUDA {} runtime, architectures {}",
                                       CudaVersionText(env.runtime_version), env.architectures)
                         : std::string("CPU only (no CUDA)"));
  out += fmt::format("  driver    {}\n",
                     env.driver_found
                         ? fmt::format("{}supports CUDA {}",
                                       env.driver_version.empty() ? "" : env.driver_version + ", ",
                                       CudaVersionText(env.driver_cuda_version))
                         : std::string("not found"));
  if (env.visible_devices_set) {
    out += fmt::format("  CUDA_VISIBLE_DEVICES = '{}'\n", env.visible_devices);
  }
  for (const GpuDevice& device : env.devices) {
    out += fmt::format(
        "  GPU {}     {} · compute {}.{} · {} SMs · {} total, {} free{}\n", device.ordinal,
        device.name, device.major, device.minor, device.multiprocessors,
        Gigabytes(device.total_bytes), device.free_bytes >= 0 ? Gigabytes(device.free_bytes) : "?",
        device.utilization_percent >= 0 ? fmt::format(" · {}% busy", device.utilization_percent)
                                        : std::string());
    for (const GpuProcess& process : device.processes) {
      out += fmt::format(
          "            process {} {}{}\n", process.pid, process.name,
          process.used_bytes >= 0 ? " holds " + Gigabytes(process.used_bytes) : std::string());
    }
  }
  if (env.injected) out += "  (some values injected through TABFORGE_INJECT_*)\n";
  out += "checks\n";
  for (const CheckResult& check : diagnosis.checks) {
    out += fmt::format("  {:<8} {:<19} {}\n", StatusName(check.status), check.id, check.finding);
    if (!check.remedy.empty())
      out += fmt::format("  {:<8} {:<19} remedy: {}\n", "", "", check.remedy);
  }
  out += fmt::format("verdict: {} (exit {})\n", diagnosis.verdict, diagnosis.exit_status);
  return out;
}

std::string FormatJson(const GpuEnvironment& env, const Diagnosis& diagnosis) {
  nlohmann::json out;
  out["build"] = {{"cuda", env.built_with_cuda},
                  {"runtime_version", CudaVersionText(env.runtime_version)},
                  {"architectures", env.architectures}};
  out["driver"] = {{"found", env.driver_found},
                   {"version", env.driver_version},
                   {"cuda_version", CudaVersionText(env.driver_cuda_version)},
                   {"init_error", env.init_error},
                   {"nvml", env.nvml_found},
                   {"cublas", env.cublas_found}};
  out["devices"] = nlohmann::json::array();
  for (const GpuDevice& device : env.devices) {
    nlohmann::json processes = nlohmann::json::array();
    for (const GpuProcess& process : device.processes) {
      processes.push_back(
          {{"pid", process.pid}, {"name", process.name}, {"used_bytes", process.used_bytes}});
    }
    out["devices"].push_back(
        {{"ordinal", device.ordinal},
         {"name", device.name},
         {"compute_capability", fmt::format("{}.{}", device.major, device.minor)},
         {"multiprocessors", device.multiprocessors},
         {"total_bytes", device.total_bytes},
         {"free_bytes", device.free_bytes},
         {"utilization_percent", device.utilization_percent},
         {"processes", processes}});
  }
  out["checks"] = nlohmann::json::array();
  for (const CheckResult& check : diagnosis.checks) {
    out["checks"].push_back({{"id", check.id},
                             {"status", StatusName(check.status)},
                             {"finding", check.finding},
                             {"remedy", check.remedy}});
  }
  out["usable_device"] = diagnosis.usable_device;
  out["verdict"] = diagnosis.verdict;
  out["exit_status"] = diagnosis.exit_status;
  out["injected"] = env.injected;
  return out.dump(2) + "\n";
}

std::string FormatMarkdownTable() {
  std::string out = "| What you see | Check (`tabforge doctor`) | What it looks for |\n";
  out += "|---|---|---|\n";
  for (const CheckRow& row : CheckTable()) {
    out += fmt::format("| {} | `{}` | {} |\n", row.symptom, row.id, row.cause);
  }
  return out;
}

}  // namespace tabforge::device
