// Which CUDA device a fit may use, asked of the CUDA runtime. Every build answers: a CPU-only
// build says it has no CUDA, a machine without a driver or a device says so in plain words.
#pragma once

#include <cstdint>
#include <string>

namespace tabforge::device {

struct CudaDeviceInfo {
  bool usable = false;
  std::string problem;  // when not usable: what is wrong and what to do
  int ordinal = 0;
  std::string name;
  int major = 0;  // compute capability
  int minor = 0;
  int multiprocessors = 0;
  std::int64_t total_bytes = 0;
  std::int64_t free_bytes = 0;
  int driver_version = 0;   // CUDA version the driver supports, e.g. 13000
  int runtime_version = 0;  // CUDA runtime this build links, e.g. 13000
};

// Looks up device `ordinal` (and makes it current when usable).
CudaDeviceInfo QueryCudaDevice(int ordinal);

}  // namespace tabforge::device
