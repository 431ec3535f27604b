// CUDA build: versions fixed when this file was compiled by nvcc.
#include <cuda_runtime_api.h>

#include <string>

#include "device/cuda_runtime.h"

namespace tabforge::device {

bool BuiltWithCuda() { return true; }

std::string CompiledRuntimeVersion() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
}

std::string CompiledArchitectures() { return TABFORGE_CUDA_ARCHITECTURES; }

}  // namespace tabforge::device
