// Which CUDA device a fit may use, asked of the CUDA runtime. Every build answers: a CPU-only
// build says it has no CUDA, a machine without a driver or a device says so in plain words.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

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

// Starts the CUDA runtime on device `ordinal` on a thread of its own, so that work done
// meanwhile (reading or binning the data) hides it: the first call on a device sets up its
// context (about 0.2 s on an H100). Waits for it when destroyed or by Wait(). Reports nothing:
// a device that cannot be used is reported by whatever uses it next.
class CudaWarmUp {
 public:
  explicit CudaWarmUp(int ordinal);
  ~CudaWarmUp();
  CudaWarmUp(const CudaWarmUp&) = delete;
  CudaWarmUp& operator=(const CudaWarmUp&) = delete;
  // Waits for the start (at once when it is over or was never begun); returns the seconds
  // waited.
  double Wait();

 private:
  std::thread thread_;
};

}  // namespace tabforge::device
