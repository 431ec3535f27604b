// CPU-only build: there is no CUDA device to use.
#include "device/cuda_device.h"

namespace tabforge::device {

CudaDeviceInfo QueryCudaDevice(int ordinal) {
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  info.problem =
      "this tabforge was built without CUDA; build with -DTABFORGE_CUDA=ON on a "
      "machine with the CUDA toolkit for GPU training";
  return info;
}

}  // namespace tabforge::device
