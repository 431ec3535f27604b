// TFG_HOST_DEVICE marks inline functions compiled for both the host and CUDA devices: the
// shared math that CPU loops (.cc) and kernels (.cu) both call (see STYLE.md).
#pragma once

#if defined(__CUDACC__)
#define TFG_HOST_DEVICE __host__ __device__
#else
#define TFG_HOST_DEVICE
#endif
