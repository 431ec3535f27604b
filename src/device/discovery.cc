#include "device/discovery.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/dynamic_library.h"
#include "core/strings.h"
#include "device/cuda_runtime.h"

namespace tabforge::device {
namespace {

// The driver API and NVML entry points used, declared here so no NVIDIA header is needed.
using CuResult = int;
using CuInit = CuResult(unsigned int);
using CuDriverGetVersion = CuResult(int*);
using CuDeviceGetCount = CuResult(int*);
using CuDeviceGet = CuResult(int*, int);
using CuDeviceGetName = CuResult(char*, int, int);
using CuDeviceGetAttribute = CuResult(int*, int, int);
using CuDeviceTotalMem = CuResult(std::size_t*, int);
using CuDeviceGetPciBusId = CuResult(char*, int, int);
using CuGetErrorName = CuResult(CuResult, const char**);
constexpr int kAttributeMultiprocessors = 16;
constexpr int kAttributeMajor = 75;
constexpr int kAttributeMinor = 76;

using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using NvmlInit = NvmlReturn();
using NvmlShutdown = NvmlReturn();
using NvmlSystemGetDriverVersion = NvmlReturn(char*, unsigned int);
using NvmlDeviceGetHandleByPciBusId = NvmlReturn(const char*, NvmlDevice*);
using NvmlDeviceGetMemoryInfo = NvmlReturn(NvmlDevice, NvmlMemory*);
using NvmlDeviceGetUtilizationRates = NvmlReturn(NvmlDevice, NvmlUtilization*);
using NvmlDeviceGetComputeRunningProcesses = NvmlReturn(NvmlDevice, unsigned int*,
                                                        NvmlProcessInfo*);
using NvmlSystemGetProcessName = NvmlReturn(unsigned int, char*, unsigned int);

std::string Env(const char* name, bool* set = nullptr) {
  const char* value = std::getenv(name);
  if (set != nullptr) *set = value != nullptr;
  return value != nullptr ? std::string(value) : std::string();
}

int ParseCudaVersion(const std::string& text) {
  const std::size_t dot = text.find('.');
  const int major = std::atoi(text.substr(0, dot).c_str());
  const int minor = dot == std::string::npos ? 0 : std::atoi(text.substr(dot + 1).c_str());
  return major * 1000 + minor * 10;
}

std::vector<std::string> SplitOn(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

bool FileContains(const char* path, const char* needle) {
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return text.find(needle) != std::string::npos;
}

void FindDriver(GpuEnvironment& env) {
#ifdef _WIN32
  static DynamicLibrary driver = DynamicLibrary::Open({"nvcuda.dll"});
#else
  static DynamicLibrary driver = DynamicLibrary::Open({"libcuda.so.1", "libcuda.so"});
#endif
  if (!driver.loaded()) {
    env.driver_error = driver.error();
    return;
  }
  env.driver_found = true;
  CuInit* init = nullptr;
  CuDriverGetVersion* get_version = nullptr;
  CuDeviceGetCount* get_count = nullptr;
  CuDeviceGet* get_device = nullptr;
  CuDeviceGetName* get_name = nullptr;
  CuDeviceGetAttribute* get_attribute = nullptr;
  CuDeviceTotalMem* total_mem = nullptr;
  CuDeviceGetPciBusId* bus_id = nullptr;
  CuGetErrorName* error_name = nullptr;
  if (!driver.Find(&init, "cuInit") || !driver.Find(&get_version, "cuDriverGetVersion") ||
      !driver.Find(&get_count, "cuDeviceGetCount") || !driver.Find(&get_device, "cuDeviceGet") ||
      !driver.Find(&get_name, "cuDeviceGetName") ||
      !driver.Find(&get_attribute, "cuDeviceGetAttribute") ||
      !driver.Find(&total_mem, "cuDeviceTotalMem_v2") ||
      !driver.Find(&bus_id, "cuDeviceGetPCIBusId")) {
    env.init_error = "the driver library " + driver.name() + " lacks CUDA driver API entry points";
    return;
  }
  driver.Find(&error_name, "cuGetErrorName");
  get_version(&env.driver_cuda_version);
  if (const CuResult status = init(0); status != 0) {
    const char* name = nullptr;
    if (error_name != nullptr) error_name(status, &name);
    env.init_error = name != nullptr ? name : fmt::format("CUDA driver error {}", status);
    return;
  }
  int count = 0;
  get_count(&count);
  // NVML adds the driver's version, free memory, utilisation and processes, matched by bus id.
#ifdef _WIN32
  static DynamicLibrary nvml = DynamicLibrary::Open({"nvml.dll"});
#else
  static DynamicLibrary nvml = DynamicLibrary::Open({"libnvidia-ml.so.1", "libnvidia-ml.so"});
#endif
  NvmlInit* nvml_init = nullptr;
  NvmlShutdown* nvml_shutdown = nullptr;
  NvmlSystemGetDriverVersion* nvml_driver = nullptr;
  NvmlDeviceGetHandleByPciBusId* nvml_handle = nullptr;
  NvmlDeviceGetMemoryInfo* nvml_memory = nullptr;
  NvmlDeviceGetUtilizationRates* nvml_utilization = nullptr;
  NvmlDeviceGetComputeRunningProcesses* nvml_processes = nullptr;
  NvmlSystemGetProcessName* nvml_process_name = nullptr;
  if (!nvml.loaded()) {
    env.nvml_error = nvml.error();
  } else if (!nvml.Find(&nvml_init, "nvmlInit_v2") || !nvml.Find(&nvml_shutdown, "nvmlShutdown") ||
             !nvml.Find(&nvml_handle, "nvmlDeviceGetHandleByPciBusId_v2") ||
             !nvml.Find(&nvml_memory, "nvmlDeviceGetMemoryInfo") || nvml_init() != 0) {
    env.nvml_error = "NVML (" + nvml.name() + ") did not start";
  } else {
    env.nvml_found = true;
    nvml.Find(&nvml_driver, "nvmlSystemGetDriverVersion");
    nvml.Find(&nvml_utilization, "nvmlDeviceGetUtilizationRates");
    if (!nvml.Find(&nvml_processes, "nvmlDeviceGetComputeRunningProcesses_v3")) {
      nvml.Find(&nvml_processes, "nvmlDeviceGetComputeRunningProcesses_v2");
    }
    nvml.Find(&nvml_process_name, "nvmlSystemGetProcessName");
    char version[96] = {};
    if (nvml_driver != nullptr && nvml_driver(version, sizeof(version)) == 0) {
      env.driver_version = version;
    }
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int handle = 0;
    if (get_device(&handle, ordinal) != 0) continue;
    GpuDevice device;
    device.ordinal = ordinal;
    char name[256] = {};
    get_name(name, sizeof(name), handle);
    device.name = name;
    get_attribute(&device.major, kAttributeMajor, handle);
    get_attribute(&device.minor, kAttributeMinor, handle);
    get_attribute(&device.multiprocessors, kAttributeMultiprocessors, handle);
    std::size_t total = 0;
    total_mem(&total, handle);
    device.total_bytes = static_cast<std::int64_t>(total);
    char bus[64] = {};
    NvmlDevice nvml_device = nullptr;
    if (env.nvml_found && bus_id(bus, sizeof(bus), handle) == 0 &&
        nvml_handle(bus, &nvml_device) == 0) {
      NvmlMemory memory{};
      if (nvml_memory(nvml_device, &memory) == 0) {
        device.free_bytes = static_cast<std::int64_t>(memory.free);
      }
      NvmlUtilization utilization{};
      if (nvml_utilization != nullptr && nvml_utilization(nvml_device, &utilization) == 0) {
        device.utilization_percent = static_cast<int>(utilization.gpu);
      }
      unsigned int listed = 64;
      std::vector<NvmlProcessInfo> processes(listed);
      if (nvml_processes != nullptr &&
          nvml_processes(nvml_device, &listed, processes.data()) == 0) {
        for (unsigned int at = 0; at < listed && at < processes.size(); ++at) {
          GpuProcess process;
          process.pid = processes[at].pid;
          // NVML reports "not available" as all ones.
          process.used_bytes = processes[at].used_gpu_memory == ~0ull
                                   ? -1
                                   : static_cast<std::int64_t>(processes[at].used_gpu_memory);
          char process_name[256] = {};
          if (nvml_process_name != nullptr &&
              nvml_process_name(process.pid, process_name, sizeof(process_name)) == 0) {
            process.name = process_name;
          }
          device.processes.push_back(process);
        }
      }
    }
    env.devices.push_back(device);
  }
  if (env.nvml_found) nvml_shutdown();
}

void FindSurroundings(GpuEnvironment& env) {
  env.visible_devices = Env("CUDA_VISIBLE_DEVICES", &env.visible_devices_set);
#ifdef _WIN32
  env.windows = true;
#else
  env.in_container =
      std::filesystem::exists("/.dockerenv") || std::filesystem::exists("/run/.containerenv") ||
      FileContains("/proc/1/cgroup", "docker") || FileContains("/proc/1/cgroup", "kubepods");
  env.in_wsl =
      FileContains("/proc/version", "microsoft") || FileContains("/proc/version", "Microsoft");
#endif
  env.cuda_path = Env("CUDA_PATH", &env.cuda_path_set);
  env.search_path = Env("PATH");
  std::error_code error;
  env.work_dir = std::filesystem::current_path(error).string();
#ifndef _WIN32
  env.install_dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path().string();
#endif
}

void ApplyInjections(GpuEnvironment& env) {
  bool set = false;
  auto injected = [&](const char* name, std::string& value) {
    value = Env(name, &set);
    if (set) env.injected = true;
    return set;
  };
  std::string value;
  if (injected("TABFORGE_INJECT_NO_CUDA_BUILD", value) && value == "1") {
    env.built_with_cuda = false;
    env.runtime_version = 0;
    env.architectures.clear();
  }
  if (injected("TABFORGE_INJECT_RUNTIME", value)) {
    env.built_with_cuda = true;
    env.runtime_version = ParseCudaVersion(value);
  }
  if (injected("TABFORGE_INJECT_ARCHITECTURES", value)) env.architectures = value;
  if (injected("TABFORGE_INJECT_DRIVER", value)) {
    if (value == "missing") {
      env.driver_found = false;
      env.driver_cuda_version = 0;
      env.driver_version.clear();
      env.devices.clear();
      env.driver_error = "libcuda.so.1: cannot open shared object file (injected)";
    } else {
      env.driver_found = true;
      env.driver_cuda_version = ParseCudaVersion(value);
    }
  }
  if (injected("TABFORGE_INJECT_DEVICES", value)) {
    env.driver_found = true;
    if (env.driver_cuda_version == 0) env.driver_cuda_version = env.runtime_version;
    env.devices.clear();
    int ordinal = 0;
    for (const std::string& spec : SplitOn(value, ';')) {
      const std::vector<std::string> fields = SplitOn(spec, ',');
      GpuDevice device;
      device.ordinal = ordinal++;
      device.name = fields.size() > 0 ? fields[0] : "GPU";
      const int capability = fields.size() > 1 ? ParseCudaVersion(fields[1]) : 9000;
      device.major = capability / 1000;
      device.minor = capability % 1000 / 10;
      device.total_bytes =
          static_cast<std::int64_t>((fields.size() > 2 ? std::atof(fields[2].c_str()) : 16) * 1e9);
      device.free_bytes = fields.size() > 3
                              ? static_cast<std::int64_t>(std::atof(fields[3].c_str()) * 1e9)
                              : device.total_bytes;
      device.multiprocessors = 80;
      env.devices.push_back(device);
    }
  }
  if (injected("TABFORGE_INJECT_INIT_ERROR", value)) {
    env.init_error = value;
    env.devices.clear();
  }
  if (injected("TABFORGE_INJECT_PROCESSES", value) && !env.devices.empty()) {
    env.devices[0].processes.clear();
    for (const std::string& spec : SplitOn(value, ';')) {
      const std::vector<std::string> fields = SplitOn(spec, ',');
      GpuProcess process;
      process.pid =
          fields.size() > 0 ? static_cast<std::uint32_t>(std::atol(fields[0].c_str())) : 0;
      process.name = fields.size() > 1 ? fields[1] : "";
      process.used_bytes =
          fields.size() > 2 ? static_cast<std::int64_t>(std::atof(fields[2].c_str()) * 1e9) : -1;
      env.devices[0].processes.push_back(process);
    }
    env.nvml_found = true;
  }
  if (injected("TABFORGE_INJECT_NVML", value) && value == "missing") {
    env.nvml_found = false;
    env.nvml_error = "libnvidia-ml.so.1: cannot open shared object file (injected)";
    for (GpuDevice& device : env.devices) {
      device.free_bytes = -1;
      device.utilization_percent = -1;
      device.processes.clear();
    }
  }
  if (injected("TABFORGE_INJECT_CUBLAS", value)) {
    env.cublas_checked = true;
    env.cublas_found = value != "missing";
    env.cublas_name = env.cublas_found ? value : "";
    env.cublas_error =
        env.cublas_found ? ""
                         : fmt::format("libcublas.so.{}: cannot open shared object file (injected)",
                                       env.runtime_version / 1000);
  }
  if (injected("TABFORGE_INJECT_CONTAINER", value)) env.in_container = value == "1";
  if (injected("TABFORGE_INJECT_OS", value)) env.windows = value == "windows";
  if (injected("TABFORGE_INJECT_CUDA_PATH", value)) {
    env.cuda_path = value;
    env.cuda_path_set = !value.empty();
  }
  if (injected("TABFORGE_INJECT_PATH", value)) env.search_path = value;
  if (injected("TABFORGE_INJECT_INSTALL_DIR", value)) env.install_dir = value;
  if (injected("TABFORGE_INJECT_WORK_DIR", value)) env.work_dir = value;
}

}  // namespace

std::string CudaVersionText(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

namespace {

// cuBLAS under the names KNN and LR open it by (cublas_library.cc), for this build's CUDA major
// version; only where there is a GPU to use it with.
void FindCublas(GpuEnvironment& env) {
  if (!env.built_with_cuda || env.devices.empty()) return;
  const std::string major = std::to_string(env.runtime_version / 1000);
#ifdef _WIN32
  const DynamicLibrary cublas = DynamicLibrary::Open({"cublas64_" + major + ".dll"});
#else
  const DynamicLibrary cublas = DynamicLibrary::Open({"libcublas.so." + major, "libcublas.so"});
#endif
  env.cublas_checked = true;
  env.cublas_found = cublas.loaded();
  env.cublas_name = cublas.loaded() ? cublas.name() : "";
  env.cublas_error = cublas.error();
}

}  // namespace

GpuEnvironment DiscoverGpus(bool open_cublas) {
  GpuEnvironment env;
  env.built_with_cuda = BuiltWithCuda();
  if (env.built_with_cuda) {
    env.runtime_version = ParseCudaVersion(CompiledRuntimeVersion());
    env.architectures = CompiledArchitectures();
  }
  FindSurroundings(env);
  if (std::getenv("TABFORGE_INJECT_DRIVER") == nullptr ||
      std::string(std::getenv("TABFORGE_INJECT_DRIVER")) != "missing") {
    if (std::getenv("TABFORGE_INJECT_DEVICES") == nullptr) FindDriver(env);
  }
  if (open_cublas && std::getenv("TABFORGE_INJECT_CUBLAS") == nullptr) FindCublas(env);
  ApplyInjections(env);
  return env;
}

}  // namespace tabforge::device
