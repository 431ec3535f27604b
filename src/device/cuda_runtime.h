// The CUDA runtime as seen by this build. In a CPU-only build every function answers
// "no CUDA" without touching any CUDA library, so callers need no #ifdef.
#pragma once

#include <string>

namespace tabforge::device {

// Whether this build contains the CUDA backend (configured with TABFORGE_CUDA on).
bool BuiltWithCuda();

// The CUDA runtime version this build was compiled against as "MAJOR.MINOR", or "" when
// built without CUDA.
std::string CompiledRuntimeVersion();

// The GPU architectures compiled in (CMAKE_CUDA_ARCHITECTURES, e.g. "75;80;86;89;90"), or "".
std::string CompiledArchitectures();

}  // namespace tabforge::device
