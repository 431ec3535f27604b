// CPU-only build: there is no CUDA neighbour search; the KNN model searches on the CPU.
#include "models/knn/knn_search.h"

namespace tabforge::knn {

bool DeviceNearestNeighbors(const std::vector<float>& /*reference*/, std::int64_t /*references*/,
                            const std::vector<float>& /*query*/, std::int64_t /*queries*/,
                            int /*dims*/, int /*k*/, bool /*skip_self*/, int /*device_id*/,
                            double /*memory_fraction*/, std::vector<std::int32_t>& /*indices*/,
                            std::vector<float>& /*distances*/, std::string& why,
                            std::string& /*device_name*/) {
  why =
      "this tabforge was built without CUDA; build with -DTABFORGE_CUDA=ON on a machine with "
      "the CUDA toolkit for GPU search";
  return false;
}

}  // namespace tabforge::knn
