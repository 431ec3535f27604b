// CPU-only build: there is no CUDA forest device; forests grow on the CPU.
#include "models/forest/forest_batch.h"

namespace tabforge::forest {

std::unique_ptr<BatchDevice> MakeCudaBatchDevice(const BatchData& /*data*/, int /*device_id*/,
                                                 double /*memory_fraction*/, std::string& why,
                                                 std::string& /*device_name*/, int /*max_slots*/) {
  why =
      "this tabforge was built without CUDA; build with -DTABFORGE_CUDA=ON on a machine with "
      "the CUDA toolkit to grow forests on a GPU";
  return nullptr;
}

}  // namespace tabforge::forest
