// CUDA build: device lookup through the runtime API, and the checked-call error (host code;
// the CPU-only build has cuda_device_cpu_only.cc).
#include "device/cuda_device.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "device/cuda_check.h"

namespace tabforge::device {

namespace {

std::string VersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

void ThrowCudaError(cudaError_t error, const char* call, const char* file, int line) {
  int ordinal = -1;
  cudaGetDevice(&ordinal);
  cudaDeviceProp properties{};
  std::string name = "unknown";
  if (ordinal >= 0 && cudaGetDeviceProperties(&properties, ordinal) == cudaSuccess) {
    name = properties.name;
  }
  std::string remedy;
  if (error == cudaErrorMemoryAllocation) {
    remedy =
        "; the GPU ran out of memory: lower gpu_memory_fraction, free the memory other "
        "processes hold (nvidia-smi lists them) or train on the CPU";
  }
  throw CudaError(std::string("CUDA call ") + call + " failed on device " +
                  std::to_string(ordinal) + " (" + name + "): " + cudaGetErrorName(error) + ", " +
                  cudaGetErrorString(error) + remedy + " (" + file + ":" + std::to_string(line) +
                  ")");
}

CudaDeviceInfo QueryCudaDevice(int ordinal) {
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  info.runtime_version = CUDART_VERSION;
  cudaDriverGetVersion(&info.driver_version);
  if (info.driver_version == 0) {
    info.problem =
        "no NVIDIA driver is installed or loaded (libcuda.so.1 / nvcuda.dll not "
        "found); install the NVIDIA driver for this GPU";
    return info;
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver || info.driver_version < CUDART_VERSION / 1000 * 1000) {
    info.problem = "the NVIDIA driver supports CUDA " + VersionText(info.driver_version) +
                   " but this build needs CUDA " + VersionText(CUDART_VERSION) +
                   "; update the NVIDIA driver";
    return info;
  }
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    info.problem =
        visible != nullptr
            ? std::string("no CUDA device is visible; CUDA_VISIBLE_DEVICES is set to '") + visible +
                  "', which hides the others"
            : "no CUDA device is visible (no NVIDIA GPU, or a container started "
              "without GPU access: docker run --gpus all)";
    return info;
  }
  if (status != cudaSuccess) {
    info.problem = std::string("the CUDA runtime cannot start: ") + cudaGetErrorString(status);
    return info;
  }
  if (ordinal >= count) {
    info.problem = "CUDA device " + std::to_string(ordinal) + " does not exist; " +
                   std::to_string(count) + " visible (ordinals 0.." + std::to_string(count - 1) +
                   ")";
    return info;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess ||
      cudaSetDevice(ordinal) != cudaSuccess) {
    info.problem = "CUDA device " + std::to_string(ordinal) + " cannot be opened";
    return info;
  }
  info.name = properties.name;
  info.major = properties.major;
  info.minor = properties.minor;
  info.multiprocessors = properties.multiProcessorCount;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (const cudaError_t memory = cudaMemGetInfo(&free_bytes, &total_bytes); memory != cudaSuccess) {
    info.problem = std::string("CUDA device ") + std::to_string(ordinal) +
                   " does not answer: " + cudaGetErrorString(memory);
    return info;
  }
  info.free_bytes = static_cast<std::int64_t>(free_bytes);
  info.total_bytes = static_cast<std::int64_t>(total_bytes);
  info.usable = true;
  return info;
}

}  // namespace tabforge::device
