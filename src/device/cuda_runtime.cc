// CPU-only build: the answers of a build without CUDA.
#include "device/cuda_runtime.h"

namespace tabforge::device {

bool BuiltWithCuda() { return false; }
std::string CompiledRuntimeVersion() { return std::string(); }
std::string CompiledArchitectures() { return std::string(); }

}  // namespace tabforge::device
