// CPU-only build: there is no CUDA path for linear models; they fit on the CPU.
#include "models/linear/linear_device.h"

namespace tabforge::linear {

std::unique_ptr<DeviceDesign> UploadDesign(const std::vector<double>& /*design*/,
                                           std::int64_t /*rows*/, int /*columns*/,
                                           const double* /*labels*/, LossKind /*loss*/,
                                           int /*outputs*/, int /*device_id*/,
                                           double /*memory_fraction*/, std::string& why) {
  why =
      "this tabforge was built without CUDA; build with -DTABFORGE_CUDA=ON on a machine with "
      "the CUDA toolkit for GPU linear models";
  return nullptr;
}

}  // namespace tabforge::linear
