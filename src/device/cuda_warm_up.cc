// CudaWarmUp (cuda_device.h): the CUDA runtime started on a thread of its own.
#include "core/timer.h"
#include "device/cuda_device.h"

namespace tabforge::device {

CudaWarmUp::CudaWarmUp(int ordinal)
    : thread_([ordinal] {
        try {
          QueryCudaDevice(ordinal);
        } catch (...) {
          // Whatever uses the device next reports what is wrong.
        }
      }) {}

CudaWarmUp::~CudaWarmUp() { Wait(); }

double CudaWarmUp::Wait() {
  Stopwatch watch;
  if (thread_.joinable()) thread_.join();
  return watch.Seconds();
}

}  // namespace tabforge::device
