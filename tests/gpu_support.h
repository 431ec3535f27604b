// For the GPU tests (ctest label "gpu"): skips the current test with the reason when CUDA
// device 0 is not usable.
#pragma once

#include <gtest/gtest.h>

#include "device/cuda_device.h"

#define TFG_REQUIRE_GPU()                                                                  \
  do {                                                                                     \
    const ::tabforge::device::CudaDeviceInfo gpu = ::tabforge::device::QueryCudaDevice(0); \
    if (!gpu.usable) GTEST_SKIP() << "no usable CUDA device: " << gpu.problem;             \
  } while (false)
