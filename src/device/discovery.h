// What the machine offers for GPU training, found without linking any NVIDIA library: the CUDA
// driver (libcuda.so.1 / nvcuda.dll), NVML (libnvidia-ml.so.1 / nvml.dll) and cuBLAS are
// opened at run time, so a machine without them is described, never crashed, in every build.
//
// Fault injection: environment variables read only here let tests (and users reproducing a
// report) pretend a machine. Each replaces what discovery would have found:
//   TABFORGE_INJECT_DRIVER       "missing", or the CUDA version the driver supports ("12.4")
//   TABFORGE_INJECT_INIT_ERROR   a driver error name cuInit returns (CUDA_ERROR_UNKNOWN, ...)
//   TABFORGE_INJECT_DEVICES      "" for none, or "NAME,MAJOR.MINOR,TOTAL_GB,FREE_GB;..."
//   TABFORGE_INJECT_PROCESSES    processes on GPU 0: "PID,NAME,GB;..."
//   TABFORGE_INJECT_NVML         "missing"
//   TABFORGE_INJECT_CUBLAS       "missing", or the cuBLAS library name that opened
//   TABFORGE_INJECT_NO_CUDA_BUILD  "1": as a build without CUDA
//   TABFORGE_INJECT_RUNTIME      as a CUDA build of this runtime version ("12.6")
//   TABFORGE_INJECT_ARCHITECTURES  its GPU architectures ("60;70;80")
//   TABFORGE_INJECT_CONTAINER    "1": as inside a container
//   TABFORGE_INJECT_OS           "windows" (with the four below) or "linux"
//   TABFORGE_INJECT_CUDA_PATH, TABFORGE_INJECT_PATH, TABFORGE_INJECT_INSTALL_DIR,
//   TABFORGE_INJECT_WORK_DIR     Windows: CUDA_PATH, PATH, tabforge's folder, the working folder
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tabforge::device {

struct GpuProcess {
  std::uint32_t pid = 0;
  std::string name;
  std::int64_t used_bytes = -1;  // -1: not reported
};

struct GpuDevice {
  int ordinal = 0;  // CUDA ordinal (as CUDA_VISIBLE_DEVICES leaves them)
  std::string name;
  int major = 0;  // compute capability
  int minor = 0;
  int multiprocessors = 0;
  std::int64_t total_bytes = 0;
  std::int64_t free_bytes = -1;       // -1: unknown
  int utilization_percent = -1;       // NVML; -1: unknown
  std::vector<GpuProcess> processes;  // NVML: processes holding memory on it
};

struct GpuEnvironment {
  // This build.
  bool built_with_cuda = false;
  int runtime_version = 0;    // CUDA runtime compiled in, e.g. 13000
  std::string architectures;  // compiled GPU architectures, e.g. "75;80;86;89;90"
  // The driver.
  bool driver_found = false;
  std::string driver_error;     // why libcuda could not be opened
  int driver_cuda_version = 0;  // highest CUDA version it supports, e.g. 13000
  std::string driver_version;   // e.g. "580.65.06" (NVML), or "" when unknown
  std::string init_error;       // cuInit's error name, "" when it succeeded
  bool nvml_found = false;
  std::string nvml_error;
  // cuBLAS (KNN and LR on the GPU), opened the way they open it; only looked for when asked
  // (DiscoverGpus' open_cublas), in a CUDA build on a machine with a GPU.
  bool cublas_checked = false;
  bool cublas_found = false;
  std::string cublas_name;   // the library that opened
  std::string cublas_error;  // why none did
  std::vector<GpuDevice> devices;
  // The surroundings.
  bool visible_devices_set = false;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES
  bool in_container = false;
  bool in_wsl = false;
  bool windows = false;
  bool cuda_path_set = false;
  std::string cuda_path;    // CUDA_PATH
  std::string search_path;  // PATH (the DLL search path on Windows)
  std::string install_dir;  // where tabforge runs from
  std::string work_dir;
  bool injected = false;  // some value came from TABFORGE_INJECT_*
};

// Looks at the machine (and applies any TABFORGE_INJECT_* values). `open_cublas`: also open
// cuBLAS where there is a GPU (it takes a moment, so only `tabforge doctor` asks).
GpuEnvironment DiscoverGpus(bool open_cublas = false);

// "13.0" from 13000.
std::string CudaVersionText(int version);

}  // namespace tabforge::device
